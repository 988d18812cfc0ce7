# Run by tests/gdb/run_gdb_test.sh on tests/gdb/gdb_target: prints each of the program's printer
# arrays (0-d, empty, 5-d, abbreviated, 2048x2048, scientific, integral, NaN/Inf, ids, mask, a
# leaf tensor) through the pretty-printers and compares the text with PyTorch's repr of the same
# values (tests/gdb/expected_reprs.txt). Prints "repr ok NAME" or "repr MISMATCH NAME" and both texts.
set pagination off
set confirm off
set breakpoint pending on
set print pretty on
break xtgrad::Tensor::backward
run
python
import re
import time

expected, name = {}, None
for line in open("tests/gdb/expected_reprs.txt"):
    line = line.rstrip("\n")
    if line.startswith("#"):
        continue
    if line.startswith("== "):
        name = line[3:]
        expected[name] = []
    else:
        expected[name].append(line)
for name, lines in expected.items():
    want = "\n".join(lines)
    start = time.monotonic()
    text = gdb.parse_and_eval("gdb_target::" + name).format_string(pretty_structs=True)
    seconds = time.monotonic() - start
    # xtgrad::Array (2,3) = {\n  values = tensor(...)\n}: the repr's later lines are indented by
    # the width of "  values = " (11) to line up under its first line.
    match = re.search(r"\n  values = (.*)\n\}$", text, re.S)
    got = re.sub(r"\n {11}", "\n", match.group(1)) if match else text
    if got == want:
        print("repr ok %s (%.2f s)" % (name, seconds))
    else:
        print("repr MISMATCH %s\n--- torch\n%s\n--- printer\n%s" % (name, want, text))
end
print gdb_target::matrix
print gdb_target::bits
xt-node gdb_target::leaf_gradient
kill
