//! Spans as OTLP: the protobuf request an OTLP/HTTP endpoint takes, and the
//! OTLP JSON a collector's file receiver reads (one request per line),
//! both from `opentelemetry-proto`'s messages.

use crate::model::{Kind, Span, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{span, status, ResourceSpans, ScopeSpans, Status};
use prost::Message;

/// The instrumentation scope of every span: ctxlog, its version.
pub const SCOPE: &str = "ctxlog";

/// One OTLP request: the resource's attributes (`service.name` and what
/// `OTEL_RESOURCE_ATTRIBUTES` adds) and a batch of spans.
pub fn request(resource: &[(String, String)], spans: Vec<Span>) -> ExportTraceServiceRequest {
    let attributes = resource
        .iter()
        .map(|(k, v)| key_value(k.clone(), Value::Str(v.clone())))
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes,
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SCOPE.into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                spans: spans.into_iter().map(span).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// The request as protobuf bytes (`application/x-protobuf`).
pub fn protobuf(request: &ExportTraceServiceRequest) -> Vec<u8> {
    request.encode_to_vec()
}

/// The request as one line of OTLP JSON (hex ids, camelCase names,
/// integer enums), without the newline.
pub fn json_line(request: &ExportTraceServiceRequest) -> Result<String, serde_json::Error> {
    serde_json::to_string(request)
}

fn span(s: Span) -> opentelemetry_proto::tonic::trace::v1::Span {
    let kind = match s.kind {
        Kind::Internal => span::SpanKind::Internal,
        Kind::Client => span::SpanKind::Client,
    };
    let status = match s.error {
        Some(message) => Status {
            message,
            code: status::StatusCode::Error as i32,
        },
        None => Status {
            message: String::new(),
            code: status::StatusCode::Unset as i32,
        },
    };
    opentelemetry_proto::tonic::trace::v1::Span {
        trace_id: s.trace.to_vec(),
        span_id: s.id.to_vec(),
        parent_span_id: s.parent.map(|p| p.to_vec()).unwrap_or_default(),
        name: s.name,
        kind: kind as i32,
        start_time_unix_nano: s.start_ns,
        end_time_unix_nano: s.end_ns,
        attributes: attributes(s.attributes),
        events: s
            .events
            .into_iter()
            .map(|e| span::Event {
                time_unix_nano: e.time_ns,
                name: e.name,
                attributes: attributes(e.attributes),
                dropped_attributes_count: 0,
            })
            .collect(),
        status: Some(status),
        ..opentelemetry_proto::tonic::trace::v1::Span::default()
    }
}

fn attributes(list: Vec<(&'static str, Value)>) -> Vec<KeyValue> {
    list.into_iter()
        .map(|(k, v)| key_value(k.to_owned(), v))
        .collect()
}

fn key_value(key: String, value: Value) -> KeyValue {
    KeyValue {
        key,
        value: Some(any(value)),
        ..KeyValue::default()
    }
}

fn any(value: Value) -> AnyValue {
    let value = match value {
        Value::Str(s) => any_value::Value::StringValue(s),
        Value::Int(i) => any_value::Value::IntValue(i),
        Value::Bool(b) => any_value::Value::BoolValue(b),
        Value::Strs(list) => any_value::Value::ArrayValue(ArrayValue {
            values: list.into_iter().map(|s| any(Value::Str(s))).collect(),
        }),
    };
    AnyValue { value: Some(value) }
}
