"""What the OpenTelemetry test asks of Phoenix and of the OTLP schema.

  readback.py spans URL PROJECT   every span of PROJECT, read back through
                                 Phoenix's own client, as one JSON list
                                 (an unknown project: an empty list)
  readback.py validate FILE       every line of an OTLP JSON file parsed
                                 into the protobuf ExportTraceServiceRequest
                                 (unknown fields and wrong types refused);
                                 prints the number of spans
"""

import base64
import json
import re
import sys


def spans(url, project):
    from phoenix.client import Client

    client = Client(base_url=url)
    names = [p["name"] for p in client.projects.list()]
    if project not in names:
        print("[]")
        return
    got = client.spans.get_spans(project_identifier=project, limit=1_000_000)
    print(json.dumps(got, default=str))


def validate(path):
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    total = 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            doc = json.loads(line)
            # OTLP JSON writes ids in hex where proto3 JSON has base64:
            # check the hex, then give the parser what it reads.
            for rs in doc["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        for key, size in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
                            value = span.get(key)
                            if not value:
                                continue
                            if not re.fullmatch("[0-9a-f]{%d}" % (2 * size), value):
                                sys.exit(f"line {number}: {key} {value!r} is not {size} bytes of hex")
                            span[key] = base64.b64encode(bytes.fromhex(value)).decode()
            message = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest())
            for rs in message.resource_spans:
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        if len(span.trace_id) != 16 or len(span.span_id) != 8:
                            sys.exit(f"line {number}: a span's ids have the wrong size")
                        total += 1
    print(total)


if __name__ == "__main__":
    if sys.argv[1] == "spans":
        spans(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "validate":
        validate(sys.argv[2])
    else:
        sys.exit(__doc__)
