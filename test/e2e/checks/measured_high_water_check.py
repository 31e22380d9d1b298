#!/usr/bin/env python3
"""The trainer's measured arena high-water marks on the memory picture
(fsdpc --memory-svg --measured-trace), read back from the SVG's data-*
attributes and checked against the plan (fsdpc --report=json) and the
trainer's --trace:

- one point per all-gather wait of the step, in order, and one at its end,
  each carrying the figure of the trace;
- each measured mark is at most the planned high-water mark at its wait (the
  top of the buffers placed so far): the step writes nothing above it, and
  the transient part was all marker before step 1;
- the end-of-step mark is the planned arena (the trainer's planned = measured);
- exactly: each mark equals the planned high-water mark at its wait. Every
  buffer's view stands right before the op that first writes it, that op
  writes its last byte, and a gathered unit is complete at its wait; so at a
  wait the highest buffer placed so far has been written. (What would break
  it: a highest buffer still being written by a collective in flight, or a
  last byte that happens to equal the marker 0xA5; docs/CostModel.md,
  section 4.)
- the dashed planned line passes through every point and ends at the arena.

    measured_high_water_check.py REPORT_JSON MEMORY_SVG MEASURED_TRACE
"""

import json
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def main():
    report_path, svg_path, trace_path = sys.argv[1:4]
    with open(report_path) as f:
        arena = json.load(f)["per_rank_bytes"]["arena"]
    with open(trace_path) as f:
        marks = json.load(f)["arena_high_water"]
    root = ET.parse(svg_path).getroot()
    failures = []

    def check(name, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            failures.append(name)

    points = [c for c in root.iter(f"{NS}circle") if c.get("class") == "measured-high-water"]
    waits = [p for p in points if p.get("data-at") == "gather-wait"]
    ends = [p for p in points if p.get("data-at") == "end-of-step"]
    measured = [int(p.get("data-measured-bytes")) for p in waits]
    planned = [int(p.get("data-planned-bytes")) for p in waits]
    check("points", len(ends) == 1 and measured == marks["after_gather_waits"] and
          [int(p.get("data-index")) for p in waits] == list(range(len(waits))) and
          int(ends[0].get("data-measured-bytes")) == marks["end_of_step"],
          f"{len(waits)} gather waits {measured}, end of step {marks['end_of_step']}")
    times = [float(p.get("data-time-seconds")) for p in waits]
    step_seconds = float(root.get("data-step-seconds"))
    check("points in order along the step", times == sorted(times) and
          all(0 < t <= step_seconds for t in times) and
          float(ends[0].get("data-time-seconds")) == step_seconds,
          f"{len(times)} times in a step of {step_seconds:.3g} s")

    persistent, arena_bytes = arena["persistent_bytes"], arena["arena_bytes"]
    check("planned high-water within the arena",
          all(persistent <= p <= arena_bytes for p in planned) and planned == sorted(planned),
          f"{planned}, persistent {persistent}, arena {arena_bytes}")
    above = [(i, m, p) for i, (m, p) in enumerate(zip(measured, planned)) if m > p]
    check("measured <= planned at each wait", not above,
          f"every mark at most the top placed so far" if not above else f"(index, measured, planned) {above}")
    end = int(ends[0].get("data-measured-bytes"))
    check("end of step = planned arena", end == arena_bytes and
          int(ends[0].get("data-planned-bytes")) == arena_bytes,
          f"measured {end} B, arena {arena_bytes} B")
    differ = [(i, m, p) for i, (m, p) in enumerate(zip(measured, planned)) if m != p]
    check("measured = planned at each wait", not differ,
          f"{len(measured)} of {len(measured)} equal" if not differ
          else f"(index, measured, planned) {differ}")

    # The drawing: the dashed step line's level at each point's x is the
    # point's y (two decimals: within a hundredth of a pixel), and it ends at
    # the arena.
    lines = [p for p in root.iter(f"{NS}path") if p.get("class") == "planned-high-water"]
    check("one planned high-water line", len(lines) == 1 and
          int(lines[0].get("data-final-bytes")) == arena_bytes,
          f"{len(lines)}, final {lines[0].get('data-final-bytes') if lines else None}")
    if lines:
        vertices = [(float(x), float(y)) for x, y in
                    re.findall(r"[ML]([-0-9.]+),([-0-9.]+)", lines[0].get("d"))]

        def on_line(x, y, tolerance=0.011):
            # Coordinates have two decimals; the line is horizontal and
            # vertical segments from vertex to vertex.
            for (x0, y0), (x1, y1) in zip(vertices, vertices[1:]):
                if (min(x0, x1) - tolerance <= x <= max(x0, x1) + tolerance and
                        min(y0, y1) - tolerance <= y <= max(y0, y1) + tolerance):
                    return True
            return False

        off = [(p.get("data-index", "end"), p.get("cx"), p.get("cy")) for p in points
               if not on_line(float(p.get("cx")), float(p.get("cy")))]
        check("points on the planned line", not off,
              f"{len(points)} points" if not off else f"(index, x, y, line) {off}")

    if failures:
        sys.exit(f"FAILED: {', '.join(failures)}")
    print("PASS: the measured marks lie on the planned high-water mark")


if __name__ == "__main__":
    main()
