"""How OpenMP's wait policy changes sampling speed, on idle cores and on shared ones.

The ``agentworld`` CLI sets ``OMP_WAIT_POLICY=PASSIVE`` (``agentworld.openmp``, where the
trade-off is written down) before torch loads, unless the user set it: a GRPO step of
``agent train`` is mostly token-by-token generation, hundreds of small OpenMP regions a
token, and with libgomp's default spinning a thread the scheduler takes away stalls every
barrier. This script samples ``--tokens`` tokens after a ``--prompt``-token prompt from the
embedded SmolLM2-135M -- with torch (batch 2, a LoRA adapter: what ``agent train`` generates
with) or llama.cpp (``--engine llamacpp``) -- in a fresh process per setting, and prints
seconds per run. Run it on idle cores and next to a load: the winner changes.

    python benchmarks/omp_wait_policy.py                 # default vs ACTIVE vs PASSIVE, torch's threads
    python benchmarks/omp_wait_policy.py --threads 1 --tokens 16
    python benchmarks/omp_wait_policy.py --engine llamacpp --tokens 64   # the embedded model on llama.cpp
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

CHILD = r"""
import sys, time, torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM
from agentworld.train.common import resolve_model
threads, prompt, tokens = (int(x) for x in sys.argv[1:4])
if threads:
    torch.set_num_threads(threads)
model = AutoModelForCausalLM.from_pretrained(resolve_model("smol"), dtype=torch.float32)
model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                               "up_proj", "down_proj"]))
ids = torch.randint(100, 20000, (2, prompt), generator=torch.Generator().manual_seed(0))
for run in range(2):
    t = time.perf_counter()
    with torch.no_grad():
        model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens,
                       min_new_tokens=tokens, do_sample=True)
    print(f"{time.perf_counter() - t:.1f}", flush=True)
"""


LLAMACPP_CHILD = r"""
import sys, time
from agentworld.models import GenerationConfig, load_backend
threads, prompt, tokens = (int(x) for x in sys.argv[1:4])
backend = load_backend("smol", engine="llamacpp", threads=threads or None, max_batch=1)
messages = [{"role": "user", "content": " ".join(["ls"] * prompt)}]
for run in range(2):
    t = time.perf_counter()
    backend.generate_once(messages, GenerationConfig(max_tokens=tokens, temperature=1.0, seed=run))
    print(f"{time.perf_counter() - t:.1f}", flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default, one per core)")
    ap.add_argument("--prompt", type=int, default=700, help="prompt tokens (a terminal task's tool prompt is ~700)")
    ap.add_argument("--tokens", type=int, default=32, help="sampled tokens")
    ap.add_argument("--engine", choices=("torch", "llamacpp"), default="torch",
                    help="torch (batch 2, with a LoRA) or llama.cpp (the shipped smol model, one request)")
    args = ap.parse_args()
    what = "batch 2 (torch)" if args.engine == "torch" else "one request (llama.cpp)"
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {what}, {args.prompt}-token prompt, "
          f"{args.tokens} sampled tokens, threads {args.threads or 'default'}")
    child = CHILD if args.engine == "torch" else LLAMACPP_CHILD
    for policy in ("", "ACTIVE", "PASSIVE"):
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
        if policy:
            env["OMP_WAIT_POLICY"] = policy
        res = subprocess.run([sys.executable, "-c", child, str(args.threads), str(args.prompt), str(args.tokens)],
                             env=env, capture_output=True, text=True)
        if res.returncode != 0:
            raise SystemExit(res.stderr[-2000:])
        runs = res.stdout.split()
        print(f"OMP_WAIT_POLICY={policy or '(unset)':9s} seconds per run: {', '.join(runs)}")


if __name__ == "__main__":
    main()
