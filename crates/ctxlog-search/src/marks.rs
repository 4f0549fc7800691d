//! A mark as the index stores it: its kind, then the ids it names, one
//! space between each (`pruned <part> <part>`, `started <job> <summary>
//! <tail or ->`, `pivot <job>`).

use crate::project::Mark;
use uuid::Uuid;

/// The text of mark `m`.
pub fn encode(m: &Mark) -> String {
    fn ids(kind: &str, ids: impl Iterator<Item = String>) -> String {
        std::iter::once(kind.to_owned())
            .chain(ids)
            .collect::<Vec<_>>()
            .join(" ")
    }
    match m {
        Mark::Pruned(_) | Mark::Restored(_) | Mark::Withdrawn(_) => {
            ids(m.kind(), m.names().iter().map(|u| u.to_string()))
        }
        Mark::Started {
            job,
            summary,
            tail_start,
        } => format!(
            "started {job} {summary} {}",
            tail_start.map_or_else(|| "-".to_owned(), |t| t.to_string())
        ),
        Mark::Pivot { job } => format!("pivot {job}"),
    }
}

/// The mark a stored text stands for; `None` when it does not read (an
/// index of another version, damaged: the caller says so).
pub fn decode(text: &str) -> Option<Mark> {
    let mut words = text.split(' ');
    let kind = words.next()?;
    let rest: Vec<&str> = words.collect();
    let uuids =
        |ws: &[&str]| -> Option<Vec<Uuid>> { ws.iter().map(|w| Uuid::parse_str(w).ok()).collect() };
    Some(match (kind, rest.as_slice()) {
        ("pruned", ws) => Mark::Pruned(uuids(ws)?.into_iter().map(Into::into).collect()),
        ("restored", ws) => Mark::Restored(uuids(ws)?.into_iter().map(Into::into).collect()),
        ("withdrawn", ws) => Mark::Withdrawn(uuids(ws)?.into_iter().map(Into::into).collect()),
        ("started", [job, summary, tail]) => Mark::Started {
            job: Uuid::parse_str(job).ok()?.into(),
            summary: Uuid::parse_str(summary).ok()?.into(),
            tail_start: match *tail {
                "-" => None,
                t => Some(Uuid::parse_str(t).ok()?.into()),
            },
        },
        ("pivot", [job]) => Mark::Pivot {
            job: Uuid::parse_str(job).ok()?.into(),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxlog_core::{MessageId, PartId};

    #[test]
    fn every_mark_reads_back_as_written() {
        let u = |n: u128| Uuid::from_u128(n);
        let marks = [
            Mark::Pruned(vec![PartId(u(1)), PartId(u(2))]),
            Mark::Restored(vec![PartId(u(3))]),
            Mark::Withdrawn(vec![MessageId(u(4))]),
            Mark::Started {
                job: MessageId(u(5)),
                summary: MessageId(u(6)),
                tail_start: None,
            },
            Mark::Started {
                job: MessageId(u(5)),
                summary: MessageId(u(6)),
                tail_start: Some(MessageId(u(7))),
            },
            Mark::Pivot {
                job: MessageId(u(8)),
            },
        ];
        for m in marks {
            assert_eq!(decode(&encode(&m)), Some(m));
        }
        assert_eq!(decode("pivot not-a-uuid"), None);
        assert_eq!(decode("later 1 2"), None);
    }
}
