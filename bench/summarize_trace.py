#!/usr/bin/env python3
"""Summarises a Chrome trace from `ropelab bench ... --profile FILE`: self time per op name,
top N. Usage: python3 bench/summarize_trace.py FILE [N]"""
import collections
import json
import sys

events = json.load(open(sys.argv[1]))
events = events['traceEvents'] if isinstance(events, dict) else events
events = [e for e in events if e.get('ph') == 'X' and 'dur' in e]
# self time: subtract the time of events nested directly inside, per thread
by_thread = collections.defaultdict(list)
for e in events:
    by_thread[e.get('tid')].append(e)
self_time, calls = collections.Counter(), collections.Counter()
for evs in by_thread.values():
    evs.sort(key=lambda e: (e['ts'], -e['dur']))
    stack = []
    for e in evs:
        while stack and stack[-1]['ts'] + stack[-1]['dur'] <= e['ts']:
            stack.pop()
        if stack:
            self_time[stack[-1]['name']] -= e['dur']
        self_time[e['name']] += e['dur']
        calls[e['name']] += 1
        stack.append(e)
total = sum(self_time.values())
n = int(sys.argv[2]) if len(sys.argv) > 2 else 25
print(f'{"op":48s} {"self ms":>9s} {"%":>6s} {"calls":>7s}')
for name, t in self_time.most_common(n):
    print(f'{name[:48]:48s} {t / 1e3:9.1f} {100 * t / total:6.1f} {calls[name]:7d}')
print(f'{"total":48s} {total / 1e3:9.1f}')
