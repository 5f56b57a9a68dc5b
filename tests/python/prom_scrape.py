"""Scrapes the gateway's /metrics and parses it with Prometheus' own Python client
(prometheus-client 0.26.0), as a Prometheus server would read it.

Usage: prom_scrape.py <url> <bearer token>
Prints {"status": <HTTP status>} and, when it is 200, one JSON line per sample:
{"name", "labels", "value"}; a body the parser refuses makes the script fail.
"""

import json
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    url, token = sys.argv[1], sys.argv[2]
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, body = resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        status, body = e.code, ""
    print(json.dumps({"status": status}), flush=True)
    if status != 200:
        return
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            print(json.dumps({"name": s.name, "labels": s.labels, "value": s.value}), flush=True)


if __name__ == "__main__":
    main()
