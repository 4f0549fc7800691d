//! [`EventPack`]: events held encoded give back exactly what was pushed,
//! across chunks, borrowed or consumed, and refuse what the codec refuses
//! without changing.

use ctxlog_core::codec::{self, MAX_ENCODED_BYTES};
use ctxlog_core::generate::{generate, GenerateConfig};
use ctxlog_core::pack::PACK_CHUNK_BYTES;
use ctxlog_core::{Envelope, Event, EventPack, PartBody};

fn recording() -> Vec<Envelope> {
    generate(&GenerateConfig {
        seed: 11,
        turns: u32::MAX,
        max_events: 6_000,
        min_output_chars: 500,
        max_output_chars: 8_000,
        ..GenerateConfig::default()
    })
    .expect("the generator runs")
}

/// `e` with a text part of `chars` characters in place of its event.
fn with_text(e: &Envelope, chars: usize) -> Envelope {
    let mut big = e.clone();
    big.event = Event::PartAppended {
        message: ctxlog_core::MessageId(uuid::Uuid::nil()),
        part: ctxlog_core::PartId(uuid::Uuid::nil()),
        body: PartBody::Text {
            text: "é".repeat(chars / 2),
            synthetic: false,
            time: None,
        },
        source_id: None,
    };
    big
}

#[test]
fn a_pack_gives_back_every_event_in_order_borrowed_or_consumed() {
    let events = recording();
    let bytes: u64 = events.iter().map(codec::encoded_len).sum();
    assert!(
        bytes > 3 * PACK_CHUNK_BYTES as u64,
        "the recording spans several chunks ({bytes} bytes)"
    );
    let pack = EventPack::try_from(&events[..]).unwrap();
    assert_eq!(pack.len(), events.len());
    assert_eq!(pack.session(), Some(events[0].session));
    assert_eq!(pack.encoded_bytes() as u64, bytes + 4 * events.len() as u64);
    assert_eq!(pack.to_vec().unwrap(), events, "borrowed");
    let again = EventPack::try_from(&events[..]).unwrap();
    assert_eq!(pack, again, "the same events pack equal");
    let consumed: Vec<Envelope> = pack.into_iter().collect::<Result<_, _>>().unwrap();
    assert_eq!(consumed, events, "consumed");
    assert!(EventPack::new().iter().next().is_none());
    assert!(EventPack::new().into_iter().next().is_none());
}

#[test]
fn an_event_larger_than_a_chunk_is_held_whole() {
    let events = recording();
    let big = with_text(&events[1], 3 * PACK_CHUNK_BYTES);
    let mut pack = EventPack::new();
    for e in [&events[0], &big, &events[2]] {
        pack.push(e).unwrap();
    }
    let back = pack.to_vec().unwrap();
    assert_eq!(back, [events[0].clone(), big, events[2].clone()]);
}

#[test]
fn an_event_the_codec_refuses_leaves_the_pack_as_it_was() {
    let events = recording();
    let mut pack = EventPack::try_from(&events[..10]).unwrap();
    let before = pack.clone();
    let too_big = with_text(&events[1], MAX_ENCODED_BYTES as usize + 2);
    assert!(pack.push(&too_big).is_err());
    assert_eq!(pack, before);
    pack.push(&events[10]).unwrap();
    assert_eq!(pack.to_vec().unwrap(), events[..11]);
}
