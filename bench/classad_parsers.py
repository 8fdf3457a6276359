"""HTCondor's own ClassAd parser (the `htcondor` package's `classad2`) against GridLedger's line parser,
on the same history file (issue 2: keep the faster one that is correct on the real samples).

Both read every ad of the file into name -> value; the line parser keeps values as text and converts only
the attributes it maps (tests/ingest/test_htcondor_history.py checks it reads the same values as classad2
on the real Gratia samples). Prints ads/s for each.

    .venv/bin/python bench/classad_parsers.py [--ads 20000]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ads", type=int, default=20_000)
    args = parser.parse_args()
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    import django

    django.setup()
    import classad2

    from ingest.parsers.htcondor_history import iter_ads
    from ingest.synthetic import write_payload_ads

    path = Path(tempfile.mkdtemp(prefix="gl-classad-")) / "history"
    write_payload_ads(path, args.ads, seed=3, padding=True)
    data = path.read_bytes()

    start = time.perf_counter()
    ours = sum(1 for item in iter_ads(path.open("rb")) if isinstance(item, tuple))
    line_seconds = time.perf_counter() - start

    start = time.perf_counter()
    text = data.decode("utf-8")
    theirs = 0
    for chunk in text.split("\n*** "):  # parseAds reads one ad per blank-line / banner separated block
        body = chunk.split("\n", 1)[1] if chunk.startswith(("*** ", "***")) or theirs else chunk
        for ad in classad2.parseAds(body):
            dict(ad.items())
            theirs += 1
    classad_seconds = time.perf_counter() - start

    print(f"ads: {args.ads} ({len(data) / args.ads:.0f} B/ad)")
    print(f"GridLedger line parser (iter_ads)   {ours / line_seconds:10,.0f} ads/s  ({ours} ads)")
    print(f"htcondor classad2.parseAds + items  {theirs / classad_seconds:10,.0f} ads/s  ({theirs} ads)")
    print(f"ratio line / classad2               {(ours / line_seconds) / (theirs / classad_seconds):10.1f} x")


if __name__ == "__main__":
    main()
