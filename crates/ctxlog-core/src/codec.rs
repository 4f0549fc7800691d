//! The one binary codec: bincode 1.3.3 with one fixed options value
//! (varint integers, little endian, trailing bytes rejected, a size limit).
//! Never use bincode's top-level `serialize`/`deserialize`: their options
//! differ (fixed-width integers, trailing bytes allowed, no limit).

use crate::event::Envelope;
use bincode::Options;
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

/// Largest value the codec encodes or decodes (64 MiB): large enough for any
/// real tool output, small enough that a corrupt length cannot exhaust memory.
pub const MAX_ENCODED_BYTES: u64 = 64 * 1024 * 1024;

/// An encode or decode failure.
#[derive(Debug, Error)]
#[error("codec: {0}")]
pub struct CodecError(#[from] bincode::Error);

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .with_little_endian()
        .reject_trailing_bytes()
        .with_limit(MAX_ENCODED_BYTES)
}

/// The same layout without the size limit, for whole derived states (a long
/// session's state can exceed the per-record limit). Never used for records.
fn unbounded() -> impl Options {
    bincode::DefaultOptions::new()
        .with_varint_encoding()
        .with_little_endian()
        .reject_trailing_bytes()
        .with_no_limit()
}

/// Streams the encoding of a whole derived state into `sink` (a hasher or a
/// buffer); same layout as [`encode`], no size limit.
pub fn encode_state_into<W: std::io::Write, T: Serialize + ?Sized>(
    sink: W,
    value: &T,
) -> Result<(), CodecError> {
    Ok(unbounded().serialize_into(sink, value)?)
}

/// Decodes a whole derived state written by [`encode_state_into`].
pub fn decode_state<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    Ok(unbounded().deserialize(bytes)?)
}

/// Encodes `value` with the fixed options.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CodecError> {
    Ok(options().serialize(value)?)
}

/// Appends `value`'s encoding to `buffer` with the fixed options (the
/// same bytes as [`encode`]); on failure `buffer` may hold part of it.
pub fn encode_into<T: Serialize + ?Sized>(
    buffer: &mut Vec<u8>,
    value: &T,
) -> Result<(), CodecError> {
    Ok(options().serialize_into(buffer, value)?)
}

/// The length of `value`'s encoding (no allocation); `u64::MAX` for a value
/// the codec refuses (larger than [`MAX_ENCODED_BYTES`]).
pub fn encoded_len<T: Serialize + ?Sized>(value: &T) -> u64 {
    options().serialized_size(value).unwrap_or(u64::MAX)
}

/// Decodes a whole buffer with the fixed options; trailing bytes are an error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    Ok(options().deserialize(bytes)?)
}

/// Decodes an envelope written under event schema `schema` (see
/// [`crate::EVENT_SCHEMA_VERSION`]). Older schemas differ only in the policy
/// of `SessionStarted` and `PolicyChanged`; every other event has the same
/// bytes in every schema.
pub fn decode_envelope(bytes: &[u8], schema: u16) -> Result<Envelope, CodecError> {
    // Only the policy's layout ever changed (schemas 2, 3, 6 and 8); schemas
    // 4, 5, 7 and 9 only added variants.
    match (schema, legacy::kind_of(bytes)) {
        (0..=1, Some(0 | 10)) => Ok(decode::<legacy::EnvelopeOld<legacy::PolicyV1>>(bytes)?.into()),
        (2, Some(0 | 10)) => Ok(decode::<legacy::EnvelopeOld<legacy::PolicyV2>>(bytes)?.into()),
        (3..=5, Some(0 | 10)) => Ok(decode::<legacy::EnvelopeOld<legacy::PolicyV3>>(bytes)?.into()),
        (6..=7, Some(0 | 10)) => Ok(decode::<legacy::EnvelopeOld<legacy::PolicyV6>>(bytes)?.into()),
        _ => decode(bytes),
    }
}

/// The older shapes of the two events whose layout changed: the policy of
/// schema 1, of schema 2, of schemas 3 to 5 and of schemas 6 and 7.
mod legacy {
    use crate::event::{Envelope, Event};
    use crate::ids::{EventId, Seq, SessionId, TimestampMs};
    use crate::policy::{
        ContinueMessage, Estimator, FailedMarker, ModelLimits, OverflowCheckAt, OverflowRule,
        PivotForm, Policy, ProviderOverflow, SummaryInput, TailRule, FULL_THRESHOLD,
    };
    use bincode::Options;
    use serde::Deserialize;
    use uuid::Uuid;

    /// `Policy` of schema 1 (before `summary_input` and `failed_marker`).
    #[derive(Deserialize)]
    pub struct PolicyV1 {
        name: String,
        auto: bool,
        prune: bool,
        overflow: OverflowRule,
        prune_protect: u64,
        prune_minimum: u64,
        prune_protect_turns: u32,
        protected_tools: Vec<String>,
        estimator: Estimator,
        tail: Option<TailRule>,
    }

    /// `Policy` of schema 2 (before `continue_message` and `provider_overflow`).
    #[derive(Deserialize)]
    pub struct PolicyV2 {
        v1: PolicyV1,
        summary_input: SummaryInput,
        failed_marker: FailedMarker,
    }

    /// `Policy` of schemas 3 to 5 (before `threshold_percent`).
    #[derive(Deserialize)]
    pub struct PolicyV3 {
        v2: PolicyV2,
        continue_message: ContinueMessage,
        provider_overflow: ProviderOverflow,
    }

    /// `Policy` of schemas 6 and 7 (before `pivot` and `check_at`).
    #[derive(Deserialize)]
    pub struct PolicyV6 {
        v3: PolicyV3,
        threshold_percent: u64,
    }

    impl From<PolicyV1> for Policy {
        fn from(p: PolicyV1) -> Policy {
            Policy {
                name: p.name,
                auto: p.auto,
                prune: p.prune,
                overflow: p.overflow,
                prune_protect: p.prune_protect,
                prune_minimum: p.prune_minimum,
                prune_protect_turns: p.prune_protect_turns,
                protected_tools: p.protected_tools,
                estimator: p.estimator,
                tail: p.tail,
                summary_input: Default::default(),
                failed_marker: Default::default(),
                continue_message: Default::default(),
                provider_overflow: Default::default(),
                threshold_percent: FULL_THRESHOLD,
                pivot: PivotForm::Question,
                check_at: OverflowCheckAt::EveryStep,
                unchecked_models: Vec::new(),
            }
        }
    }

    impl From<PolicyV2> for Policy {
        fn from(p: PolicyV2) -> Policy {
            Policy {
                summary_input: p.summary_input,
                failed_marker: p.failed_marker,
                ..p.v1.into()
            }
        }
    }

    impl From<PolicyV3> for Policy {
        fn from(p: PolicyV3) -> Policy {
            Policy {
                continue_message: p.continue_message,
                provider_overflow: p.provider_overflow,
                ..p.v2.into()
            }
        }
    }

    impl From<PolicyV6> for Policy {
        fn from(p: PolicyV6) -> Policy {
            Policy {
                threshold_percent: p.threshold_percent,
                ..p.v3.into()
            }
        }
    }

    /// The event variants in their order; only variants 0 and 10 are ever
    /// decoded through this type (the others are placeholders that keep the
    /// indices).
    #[derive(Deserialize)]
    pub enum EventOld<P> {
        SessionStarted {
            policy: P,
            limits: ModelLimits,
            title: Option<String>,
            source_id: Option<String>,
        },
        P1,
        P2,
        P3,
        P4,
        P5,
        P6,
        P7,
        P8,
        P9,
        PolicyChanged {
            policy: P,
        },
    }

    /// An older envelope holding one of the changed events.
    #[derive(Deserialize)]
    pub struct EnvelopeOld<P> {
        session: SessionId,
        seq: Seq,
        id: EventId,
        recorded_at: TimestampMs,
        causation: Option<EventId>,
        correlation: Option<Uuid>,
        event: EventOld<P>,
    }

    impl<P: Into<Policy>> From<EnvelopeOld<P>> for Envelope {
        fn from(e: EnvelopeOld<P>) -> Envelope {
            let event = match e.event {
                EventOld::SessionStarted {
                    policy,
                    limits,
                    title,
                    source_id,
                } => Event::SessionStarted {
                    policy: policy.into(),
                    limits,
                    title,
                    source_id,
                },
                EventOld::PolicyChanged { policy } => Event::PolicyChanged {
                    policy: policy.into(),
                },
                // Never decoded: `kind_of` routes only kinds 0 and 10 here.
                _ => Event::PolicyChanged {
                    policy: Policy::default(),
                },
            };
            Envelope {
                session: e.session,
                seq: e.seq,
                id: e.id,
                recorded_at: e.recorded_at,
                causation: e.causation,
                correlation: e.correlation,
                event,
            }
        }
    }

    /// The event kind of an encoded envelope: the variant index that follows
    /// the envelope's fixed fields, read with the same options.
    pub fn kind_of(bytes: &[u8]) -> Option<u32> {
        #[derive(Deserialize)]
        struct Head {
            _session: SessionId,
            _seq: Seq,
            _id: EventId,
            _recorded_at: TimestampMs,
            _causation: Option<EventId>,
            _correlation: Option<Uuid>,
            kind: u32,
        }
        let head: Head = bincode::DefaultOptions::new()
            .with_varint_encoding()
            .with_little_endian()
            .allow_trailing_bytes()
            .with_limit(super::MAX_ENCODED_BYTES)
            .deserialize(bytes)
            .ok()?;
        Some(head.kind)
    }
}
