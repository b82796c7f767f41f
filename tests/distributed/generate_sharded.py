#!/usr/bin/python3
"""nuvec generate under nuvec launch -n N shards the model across the ranks (tensor parallel, or with --pipeline
its layers) and decodes what one process decodes: a tiny random Llama folder (tiny_llama.py) is run once alone
and once on N ranks with --json; the generated ids must be equal, the log-probabilities close (the ranks sum
partial products in another order), and only rank 0 prints.

usage: generate_sharded.py NUVEC RANKS WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

from tiny_llama import write_tiny_llama

nuvec, ranks, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
model = os.path.join(work, "model")
write_tiny_llama(model)

generate = [nuvec, "generate", "--model", model, "--prompt-ids", "5,17,33,8,41", "--max-tokens", "12", "--json"]
one = json.loads(subprocess.run(generate, check=True, capture_output=True, text=True).stdout)
# The seed gives a varied continuation that does not end early, so a wrong split would show.
assert len(set(one["generated_ids"])) > 6, one["generated_ids"]
# Tensor parallel (the default), then pipeline parallel.
for extra in [[], ["--pipeline"]]:
    launched = subprocess.run([nuvec, "launch", "-n", str(ranks), "--"] + generate + extra, check=True,
                              capture_output=True, text=True).stdout
    lines = [line for line in launched.splitlines() if "] {" in line]
    assert len(lines) == 1 and lines[0].startswith("[0] {"), "expected one JSON line, from rank 0:\n" + launched
    many = json.loads(lines[0][4:])
    assert many["generated_ids"] == one["generated_ids"], (extra, many["generated_ids"], one["generated_ids"])
    np.testing.assert_allclose(many["logprobs"], one["logprobs"], rtol=1e-4, atol=1e-4, err_msg=str(extra))
    print("%d ranks %s generated %s, as one process did" % (ranks, extra, many["generated_ids"]))
