//! Schema stability: the current binary encoding of every event kind, as
//! payload and as a whole store record, is checked in under
//! `fixtures/golden/`. Each is decoded and re-encoded to the same bytes, so a
//! change that would break old logs fails here.
//!
//! Regenerate only for an intended, compatible change:
//! `CTXLOG_BLESS=1 cargo test --test golden`. The bytes of every older schema
//! stay checked in (`events-schema1.txt` … `events-schema10.txt`) and must keep
//! decoding.

use ctxlog::core::{
    codec, ContinueMessage, Envelope, Event, FailedMarker, OverflowCheckAt, PivotForm, Policy,
    ProviderOverflow, SummaryInput, EVENT_KINDS,
};
use ctxlog::store::record;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// One envelope of each kind, from the lifecycle fixture (its first occurrence).
fn one_of_each_kind() -> Vec<Envelope> {
    let text = std::fs::read_to_string(fixtures().join("lifecycle.jsonl")).unwrap();
    let events: Vec<Envelope> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    EVENT_KINDS
        .iter()
        .map(|k| {
            events
                .iter()
                .find(|e| e.event.kind() == *k)
                .unwrap_or_else(|| panic!("no {k} in the fixture"))
                .clone()
        })
        .collect()
}

#[test]
fn every_event_kind_decodes_from_its_golden_bytes_and_re_encodes_identically() {
    let path = fixtures().join("golden").join("events.txt");
    if std::env::var_os("CTXLOG_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut out = String::from(
            "# kind payload-hex record-hex (record chained from the session genesis)\n",
        );
        for e in one_of_each_kind() {
            let payload = codec::encode(&e).unwrap();
            let (rec, _) = record::encode(&e, &record::genesis(e.session)).unwrap();
            out.push_str(&format!(
                "{} {} {}\n",
                e.event.kind(),
                hex(&payload),
                hex(&rec)
            ));
        }
        std::fs::write(&path, out).unwrap();
    }
    let text = std::fs::read_to_string(&path).expect("fixtures/golden/events.txt");
    let mut kinds = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split(' ');
        let (kind, payload, rec) = (
            f.next().unwrap(),
            unhex(f.next().unwrap()),
            unhex(f.next().unwrap()),
        );
        let e: Envelope = codec::decode(&payload)
            .unwrap_or_else(|err| panic!("{kind}: old payload no longer decodes: {err}"));
        assert_eq!(e.event.kind(), kind);
        assert_eq!(
            codec::encode(&e).unwrap(),
            payload,
            "{kind}: payload re-encodes differently"
        );
        let d = record::decode(&rec, e.session, e.seq)
            .unwrap_or_else(|p| panic!("{kind}: old record no longer decodes: {p}"));
        assert_eq!(d.envelope, e);
        assert!(d.chain_follows(&record::genesis(e.session), &rec));
        let (again, _) = record::encode(&e, &record::genesis(e.session)).unwrap();
        assert_eq!(again, rec, "{kind}: record re-encodes differently");
        kinds.push(kind.to_owned());
    }
    assert_eq!(
        kinds, EVENT_KINDS,
        "every event kind has golden bytes, in variant order"
    );
}

/// Every record of an older schema still decodes, policies with the rules
/// they always had, and every event whose layout did not change re-encodes
/// to the same payload. `legacy_policy`: the schema's policy has an older
/// layout (every schema before 8).
fn older_schema_still_decodes(
    schema: u16,
    file: &str,
    legacy_policy: bool,
    check: impl Fn(&Policy),
) {
    let path = fixtures().join("golden").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut kinds = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split(' ');
        let (kind, payload, rec) = (
            f.next().unwrap(),
            unhex(f.next().unwrap()),
            unhex(f.next().unwrap()),
        );
        assert_eq!(
            u16::from_le_bytes([rec[3], rec[4]]),
            schema,
            "{kind}: schema"
        );
        let e = codec::decode_envelope(&payload, schema).unwrap_or_else(|err| {
            panic!("{kind}: schema-{schema} payload no longer decodes: {err}")
        });
        assert_eq!(e.event.kind(), kind);
        let d = record::decode(&rec, e.session, e.seq)
            .unwrap_or_else(|p| panic!("{kind}: schema-{schema} record no longer decodes: {p}"));
        assert_eq!(d.envelope, e);
        match &e.event {
            Event::SessionStarted { policy, .. } | Event::PolicyChanged { policy }
                if legacy_policy =>
            {
                check(policy);
                assert_eq!(policy.threshold_percent, 100, "{kind}");
                assert_eq!(policy.pivot, PivotForm::Question, "{kind}");
                assert_eq!(policy.check_at, OverflowCheckAt::EveryStep, "{kind}");
                assert!(codec::decode::<Envelope>(&payload).is_err());
            }
            _ => assert_eq!(codec::encode(&e).unwrap(), payload, "{kind}"),
        }
        kinds.push(kind.to_owned());
    }
    // A newer schema may only have added kinds at the end.
    assert_eq!(kinds, EVENT_KINDS[..kinds.len()]);
}

/// Schema 1: before the policy gained `summary_input` and `failed_marker`.
#[test]
fn schema_1_records_still_decode() {
    older_schema_still_decodes(1, "events-schema1.txt", true, |policy| {
        assert_eq!(policy.summary_input, SummaryInput::Messages);
        assert_eq!(policy.failed_marker, FailedMarker::Hidden);
        assert_eq!(policy.continue_message, ContinueMessage::Seed);
        assert_eq!(policy.provider_overflow, ProviderOverflow::Error);
    });
}

/// Schema 2: before the policy gained `continue_message` and
/// `provider_overflow`.
#[test]
fn schema_2_records_still_decode() {
    older_schema_still_decodes(2, "events-schema2.txt", true, |policy| {
        assert_eq!(policy.continue_message, ContinueMessage::Seed);
        assert_eq!(policy.provider_overflow, ProviderOverflow::Error);
    });
}

/// Schema 3: before `source_fields` and the policy's `threshold_percent`.
#[test]
fn schema_3_records_still_decode() {
    older_schema_still_decodes(3, "events-schema3.txt", true, |_| {});
}

/// Schema 4: before `session_described` and the policy's `threshold_percent`.
#[test]
fn schema_4_records_still_decode() {
    older_schema_still_decodes(4, "events-schema4.txt", true, |_| {});
}

/// Schema 5: before the policy's `threshold_percent`; every other record is
/// as it was.
#[test]
fn schema_5_records_still_decode() {
    older_schema_still_decodes(5, "events-schema5.txt", true, |_| {});
}

/// Schema 6: before `messages_withdrawn` and the policy's `pivot` and
/// `check_at`.
#[test]
fn schema_6_records_still_decode() {
    older_schema_still_decodes(6, "events-schema6.txt", true, |_| {});
}

/// Schema 7: before the policy's `pivot` and `check_at`; every other record
/// is as it was.
#[test]
fn schema_7_records_still_decode() {
    older_schema_still_decodes(7, "events-schema7.txt", true, |_| {});
}

/// Schema 8: before `import_started`; every record is as it was.
#[test]
fn schema_8_records_still_decode() {
    older_schema_still_decodes(8, "events-schema8.txt", false, |_| {});
}

/// Schema 10 only added variants (the roles `Developer` and `System`, the
/// estimator `BytesPerToken`).
#[test]
fn schema_9_records_still_decode() {
    older_schema_still_decodes(9, "events-schema9.txt", false, |_| {});
}

/// Schema 11 only added a variant (`Captured`).
#[test]
fn schema_10_records_still_decode() {
    older_schema_still_decodes(10, "events-schema10.txt", false, |_| {});
}
