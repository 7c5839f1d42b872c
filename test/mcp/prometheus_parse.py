"""Parses a Prometheus text exposition with the official client library's parser (Debian python3-prometheus-client)
and prints its samples as one JSON array: [{"name", "labels", "value"}]. The exposition is read from a URL
(http://...) or a file. Exit status 1 (and the parser's message on stderr) when it does not parse; 3 when the
library is missing. Used by test/unit/gateway_coordination_test.cpp."""
import json
import sys
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit(3)

source = sys.argv[1]
if source.startswith("http://"):
    with urllib.request.urlopen(source, timeout=10) as r:
        if not r.headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"):
            print("bad Content-Type: " + r.headers.get("Content-Type", ""), file=sys.stderr)
            sys.exit(1)
        text = r.read().decode("utf-8")
else:
    with open(source, encoding="utf-8") as f:
        text = f.read()
try:
    samples = [{"name": s.name, "labels": s.labels, "value": s.value}
               for family in text_string_to_metric_families(text) for s in family.samples]
except Exception as e:  # the parser raises ValueError and others on a malformed exposition
    print("does not parse: %s" % e, file=sys.stderr)
    sys.exit(1)
print(json.dumps(samples))
