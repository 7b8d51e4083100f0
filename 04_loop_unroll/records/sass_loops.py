#!/usr/bin/env python3
"""What ptxas made of a kernel's loops, from `cuobjdump -sass` output.

usage: cuobjdump -sass 04_loop_unroll/loop_unroll > loop_unroll.sass
       python3 sass_loops.py loop_unroll.sass KERNEL_SUBSTRING [--list]

For every loop of each kernel whose mangled name contains KERNEL_SUBSTRING (a loop: the
instructions from a backward branch's target to the branch), prints its instruction
count, its FFMA count, its code size and the sum of the stall counts that ptxas wrote
into the instructions' control bits. On sm_70 and later each instruction is 128 bits; bits
105-108 hold the number of cycles the warp waits before its next instruction may issue
(bits 109: yield, 110-112 and 113-115: the scoreboards it sets, 116-121: the scoreboards
it waits for). With one warp per scheduler the sum of the stall counts is the fewest
cycles one pass of the loop can take, before any wait for a variable-latency result
(a load, a constant-cache miss, an instruction fetch). --list prints every instruction
with its control fields.
"""
import re
import sys


def parse(lines, name_part):
    kernels, cur, i = {}, None, 0
    while i < len(lines):
        line = lines[i]
        if "Function :" in line:
            name = line.split("Function :")[1].strip()
            cur = name if name_part in name else None
            if cur:
                kernels[cur] = []
        elif cur:
            m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]+) \*/", line)
            if m and i + 1 < len(lines):
                hi = re.search(r"/\* (0x[0-9a-f]+) \*/", lines[i + 1])
                ctrl = int(hi.group(1), 16) if hi else 0
                kernels[cur].append({
                    "addr": int(m.group(1), 16), "op": m.group(2).strip(),
                    "stall": (ctrl >> 41) & 0xF, "yield": (ctrl >> 45) & 1,
                    "wbar": (ctrl >> 46) & 7, "rbar": (ctrl >> 49) & 7,
                    "wait": (ctrl >> 52) & 0x3F})
                i += 1
        i += 1
    return kernels


def opcode(op):
    words = op.split()
    word = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return word.split(".")[0]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip())
        return 2
    with open(argv[1]) as f:
        kernels = parse(f.read().split("\n"), argv[2])
    for name, ins in kernels.items():
        print(name)
        for k in ins:
            m = re.search(r"BRA (0x[0-9a-f]+)", k["op"])
            if not (m and int(m.group(1), 16) < k["addr"]):
                continue
            start = int(m.group(1), 16)
            body = [x for x in ins if start <= x["addr"] <= k["addr"]]
            ffma = sum(1 for x in body if opcode(x["op"]) == "FFMA")
            stall = sum(x["stall"] for x in body)
            print(f"  loop {start:#06x}-{k['addr']:#06x}: {len(body)} instructions, "
                  f"{ffma} FFMA ({100.0 * ffma / len(body):.1f}%), {16 * len(body)} bytes, "
                  f"stall counts {stall} cycles")
        if "--list" in argv:
            for x in ins:
                print(f"  {x['addr']:05x} stall {x['stall']:2d} yield {x['yield']} "
                      f"wbar {x['wbar']} rbar {x['rbar']} wait {x['wait']:02x}  {x['op']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
