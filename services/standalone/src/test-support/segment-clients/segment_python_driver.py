"""Drives Segment's Python library (segment-analytics-python) for the integration tests.

Reads a plan from stdin: {"writeKey": ..., "host": ..., "calls": [{"method": "track", "kwargs": {...}}, ...]},
makes each call through the library (timestamps given as ISO 8601 strings become datetimes),
flushes, and prints {"errors": [...]} on stdout: the library's own on_error reports. Exits 1 when
there was any, so a refused batch fails the test that ran it.
"""
import json
import sys
from datetime import datetime

import segment.analytics as analytics


def main() -> int:
    plan = json.load(sys.stdin)
    errors = []
    analytics.write_key = plan["writeKey"]
    analytics.host = plan["host"]
    analytics.max_retries = 2
    analytics.on_error = lambda error, batch: errors.append({"error": str(error), "events": len(batch)})
    for call in plan["calls"]:
        kwargs = dict(call["kwargs"])
        if "timestamp" in kwargs:
            kwargs["timestamp"] = datetime.fromisoformat(kwargs["timestamp"].replace("Z", "+00:00"))
        getattr(analytics, call["method"])(**kwargs)
    analytics.flush()
    analytics.shutdown()
    print(json.dumps({"errors": errors}))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
