//! Times as people read and type them: in their time zone (`TZ` honoured,
//! or UTC when asked), with days, weeks and months for grouping, and the
//! dates a command line accepts (`2026-11-26`, `20261126`, `7d`,
//! `yesterday`, RFC 3339). Only front doors use this: what the log keeps is
//! milliseconds since the epoch, and no reducer reads a zone or a clock.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// A time zone to show and group times in.
#[derive(Debug, Clone)]
pub struct Zone {
    tz: TimeZone,
}

/// A date a command line gave that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?}: not a date (2026-11-26, 20261126, 7d, today, yesterday or an RFC 3339 time)")]
pub struct BadDate {
    /// What was given.
    pub text: String,
}

impl Zone {
    /// The system's zone: `TZ` when set (a zone name or a POSIX rule),
    /// else `/etc/localtime`; UTC when neither says.
    pub fn system() -> Zone {
        Zone {
            tz: TimeZone::try_system().unwrap_or(TimeZone::UTC),
        }
    }

    /// UTC.
    pub fn utc() -> Zone {
        Zone { tz: TimeZone::UTC }
    }

    fn zoned(&self, ms: u64) -> Zoned {
        let ts = Timestamp::from_millisecond(i64::try_from(ms).unwrap_or(i64::MAX))
            .unwrap_or(Timestamp::MAX);
        ts.to_zoned(self.tz.clone())
    }

    /// `2025-09-25 14:02` in this zone.
    pub fn minute(&self, ms: u64) -> String {
        self.zoned(ms).strftime("%Y-%m-%d %H:%M").to_string()
    }

    /// `2025-09-25 14:02:07` in this zone.
    pub fn second(&self, ms: u64) -> String {
        self.zoned(ms).strftime("%Y-%m-%d %H:%M:%S").to_string()
    }

    /// `14:02:07` in this zone.
    pub fn clock(&self, ms: u64) -> String {
        self.zoned(ms).strftime("%H:%M:%S").to_string()
    }

    /// The zone's offset at `ms`, as text shows it: `UTC`, `+02:00`.
    pub fn offset(&self, ms: u64) -> String {
        let z = self.zoned(ms);
        if z.offset().seconds() == 0 {
            "UTC".into()
        } else {
            z.strftime("%:z").to_string()
        }
    }

    /// What a column of times in this zone is headed with: their one
    /// offset (`UTC`, `-04:00`), or, when they straddle a change of offset
    /// (summer and winter time), the zone's name (`America/New_York`;
    /// `local` for a zone without one), since no one offset is true of all.
    pub fn offsets_of(&self, times: impl IntoIterator<Item = u64>) -> String {
        let mut offsets = std::collections::BTreeSet::new();
        for ms in times {
            offsets.insert(self.offset(ms));
        }
        match offsets.len() {
            0 => self.offset(0),
            1 => offsets.into_iter().next().unwrap_or_default(),
            _ => self.tz.iana_name().unwrap_or("local").to_owned(),
        }
    }

    /// RFC 3339 with this zone's offset and milliseconds:
    /// `2025-09-25T14:02:07.120+02:00` (`Z` in UTC).
    pub fn rfc3339(&self, ms: u64) -> String {
        let z = self.zoned(ms);
        if z.offset().seconds() == 0 {
            z.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
        } else {
            z.strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
        }
    }

    /// The day of `ms`: `2025-09-25`.
    pub fn day(&self, ms: u64) -> String {
        self.zoned(ms).date().to_string()
    }

    /// The ISO week of `ms`, named by its Monday: `2025-09-22`.
    pub fn week(&self, ms: u64) -> String {
        let date = self.zoned(ms).date();
        let back = i64::from(date.weekday().to_monday_zero_offset());
        date.checked_sub(jiff::Span::new().days(back))
            .unwrap_or(date)
            .to_string()
    }

    /// The month of `ms`: `2025-09`.
    pub fn month(&self, ms: u64) -> String {
        self.zoned(ms).strftime("%Y-%m").to_string()
    }

    /// The time a command line's `text` means, in ms since the epoch: a day
    /// (`2026-11-26`, `20261126`, `today`, `yesterday`) means its start, or
    /// with `end` the start of the next day (an `--until` day is
    /// included); `7d` (also `12h`, `2w`) means that long before `now_ms`;
    /// an RFC 3339 time means itself.
    pub fn parse(&self, text: &str, end: bool, now_ms: u64) -> Result<u64, BadDate> {
        let bad = || BadDate {
            text: text.to_owned(),
        };
        let t = text.trim();
        let day = match t {
            "today" => Some(self.zoned(now_ms).date()),
            "yesterday" => self.zoned(now_ms).date().yesterday().ok(),
            _ if t.len() == 8 && t.bytes().all(|b| b.is_ascii_digit()) => {
                let n = |r: std::ops::Range<usize>| t[r].parse::<i16>().ok();
                match (n(0..4), n(4..6), n(6..8)) {
                    (Some(y), Some(m), Some(d)) => Some(
                        Date::new(
                            y,
                            i8::try_from(m).map_err(|_| bad())?,
                            i8::try_from(d).map_err(|_| bad())?,
                        )
                        .map_err(|_| bad())?,
                    ),
                    _ => None,
                }
            }
            _ if t.len() == 10 => Some(t.parse::<Date>().map_err(|_| bad())?),
            _ => None,
        };
        if let Some(day) = day {
            let day = if end {
                day.tomorrow().map_err(|_| bad())?
            } else {
                day
            };
            let start = day.to_zoned(self.tz.clone()).map_err(|_| bad())?;
            return u64::try_from(start.timestamp().as_millisecond()).map_err(|_| bad());
        }
        if let Some(ago) = relative_ms(t) {
            return Ok(now_ms.saturating_sub(ago));
        }
        let ts: Timestamp = t.parse().map_err(|_| bad())?;
        u64::try_from(ts.as_millisecond()).map_err(|_| bad())
    }
}

/// `7d`, `12h`, `2w`, `30m` in ms.
fn relative_ms(text: &str) -> Option<u64> {
    let unit = text.chars().last()?;
    let n: u64 = text[..text.len() - unit.len_utf8()].parse().ok()?;
    let ms = match unit {
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        'w' => 7 * 86_400_000,
        _ => return None,
    };
    n.checked_mul(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOON_26_NOV_2026: u64 = 1_795_694_400_000;

    #[test]
    fn dates_as_typed() {
        let utc = Zone::utc();
        let day = utc.parse("2026-11-26", false, 0).unwrap();
        assert_eq!(utc.rfc3339(day), "2026-11-26T00:00:00.000Z");
        assert_eq!(utc.parse("20261126", false, 0).unwrap(), day);
        assert_eq!(utc.parse("2026-11-26", true, 0).unwrap(), day + 86_400_000);
        assert_eq!(utc.parse("today", false, NOON_26_NOV_2026).unwrap(), day);
        assert_eq!(
            utc.parse("yesterday", false, NOON_26_NOV_2026).unwrap(),
            day - 86_400_000
        );
        assert_eq!(
            utc.parse("7d", false, NOON_26_NOV_2026).unwrap(),
            NOON_26_NOV_2026 - 7 * 86_400_000
        );
        assert_eq!(
            utc.parse("2026-11-26T12:00:00Z", false, 0).unwrap(),
            NOON_26_NOV_2026
        );
        assert!(utc.parse("26/11/2026", false, 0).is_err());
        assert!(utc.parse("20261341", false, 0).is_err());
        assert_eq!(utc.week(NOON_26_NOV_2026), "2026-11-23");
        assert_eq!(utc.month(NOON_26_NOV_2026), "2026-11");
    }

    #[test]
    fn times_across_summer_and_winter_are_headed_by_the_zones_name() {
        let Ok(tz) = TimeZone::get("America/New_York") else {
            return; // no zoneinfo database here
        };
        let ny = Zone { tz };
        let july = NOON_26_NOV_2026 - 140 * 86_400_000;
        assert_eq!(ny.offsets_of([july]), "-04:00");
        assert_eq!(ny.offsets_of([NOON_26_NOV_2026]), "-05:00");
        assert_eq!(ny.offsets_of([july, NOON_26_NOV_2026]), "America/New_York");
        assert_eq!(Zone::utc().offsets_of([july, NOON_26_NOV_2026]), "UTC");
    }

    #[test]
    fn a_zone_moves_days_and_shows_its_offset() {
        let tokyo = Zone {
            tz: TimeZone::get("Asia/Tokyo")
                .unwrap_or_else(|_| TimeZone::fixed(jiff::tz::offset(9))),
        };
        let late = NOON_26_NOV_2026 + 13 * 3_600_000; // 01:00 on the 27th in Tokyo
        assert_eq!(tokyo.day(late), "2026-11-27");
        assert_eq!(tokyo.rfc3339(late), "2026-11-27T10:00:00.000+09:00");
        assert_eq!(tokyo.offset(late), "+09:00");
        assert_eq!(Zone::utc().offset(late), "UTC");
    }
}
