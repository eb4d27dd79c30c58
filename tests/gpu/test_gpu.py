"""GPU tests: run by hand on a CUDA machine (``pytest -m gpu``); skipped without one.

They check what the CPU cannot: that TE modules compute the same function as
their PyTorch twins from the same weights (a wrong layout or weight mapping
shows up here before it shows up as a loss-parity failure), and that every GPU
path of the runner produces complete records.
"""

from __future__ import annotations

import json

import pytest
import torch

from tebench.schema.records import Case

from tebench.schema.settings import Settings
from tebench.plan.recipes import fp8_options
from tebench.schema.records import FP8Options
from tebench.worker.models import WORKLOADS
from tebench.worker.models.distill import DistillSize
from tebench.worker.models.gpt import GPTSize
from tebench.workloads.modules_spec import MODULES, ModuleSize
from tebench.workloads import size_of

pytestmark = [pytest.mark.gpu, pytest.mark.te]

DEV = torch.device("cuda")


def _rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def _same_function(workload: str, size, inputs: torch.Tensor) -> float:
    wl = WORKLOADS[workload]
    pt = wl.build(size, "pt", DEV, seed=3)
    te = wl.build(size, "te", DEV, seed=3)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        return _rel_err(te(inputs), pt(inputs))


def test_gpt_te_block_matches_pytorch_block():
    size = GPTSize(vocab=64, d_model=256, heads=4, layers=2, ffn=1024, seq=128, batch=4)
    idx = torch.randint(0, size.vocab, (size.batch, size.seq), device=DEV)
    # bf16 on both sides: agreement to bf16 rounding. A batch/sequence layout
    # mix-up or a wrong QKV split gives errors of order 1.
    assert _same_function("gpt", size, idx) < 0.02


def test_gpt_wrong_layout_is_detected_by_outputs():
    """The BRIEF's trap: feeding [batch, seq, hidden] to an sbhd layer must not match."""
    import transformer_engine.pytorch as te

    from tebench.worker.models.gpt import PTBlock, TE_BLOCK_NAMES
    from tebench.worker.models.base import canonical_shapes, init_canonical, translate_names

    size = GPTSize(vocab=64, d_model=256, heads=4, layers=1, ffn=1024, seq=128, batch=4)
    pt = PTBlock(size).to(DEV)
    init_canonical(pt.named_parameters(), 5)
    wrong = te.TransformerLayer(256, 1024, 4, hidden_dropout=0.0, attention_dropout=0.0,
                                fuse_qkv_params=True, qkv_weight_interleaved=False,
                                params_dtype=torch.float32, device=DEV)  # default sbhd
    init_canonical(translate_names(wrong, TE_BLOCK_NAMES, canonical_shapes(lambda: PTBlock(size))), 5)
    x = torch.randn(4, 128, 256, device=DEV)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        assert _rel_err(wrong(x), pt(x)) > 0.05


def test_distill_te_student_matches_pytorch_student():
    size = DistillSize(vocab=512, hidden=256, ffn=1024, blocks=3, seq=64, batch=4)
    idx = torch.randint(0, size.vocab, (size.batch, size.seq), device=DEV)
    assert _same_function("distill", size, idx) < 0.02


@pytest.mark.parametrize("module", MODULES)
def test_each_te_module_matches_pytorch(module):
    size = ModuleSize(module=module, hidden=256, tokens=512, seq=128)
    shape = (4, 128, 256) if module == "transformer_layer" else (512, 256)
    assert _same_function("module", size, torch.randn(shape, device=DEV)) < 0.02


def _small_gpt_case(mode: str, fp8: FP8Options | None = None, **kw) -> Case:
    size = GPTSize(vocab=64, d_model=256, heads=4, layers=2, ffn=1024, seq=128, batch=8)
    import dataclasses

    return Case(workload="gpt", size="small", mode=mode, dims=dataclasses.asdict(size), fp8=fp8,
                settings=Settings(steps=10, warmup=3, lr=2e-3, profile_steps=2), **kw)


def _per_step(raw) -> list[float]:
    """The loss at every step of a worker's measurements."""
    assert raw.loss is not None, "the case recorded no loss"
    return raw.loss.per_step


def test_fp8_delayed_case_records_scaling_state_and_busy_fraction():
    from tebench.worker.case import run_case

    raw = run_case(_small_gpt_case("TE-FP8", FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max")), DEV, lambda *a: None)
    state = raw.fp8_state
    assert state and state.layers, "delayed scaling must record per-layer scale/amax"
    some = next(iter(state.layers.values()))
    assert any(q["scale"][-1] != 1.0 for q in some.values()), "scales never updated from their initial 1.0"
    assert raw.gpu_busy and raw.gpu_busy.busy_fraction is not None and 0 < raw.gpu_busy.busy_fraction <= 1
    assert raw.memory and raw.memory.peak_allocated_bytes and raw.memory.peak_allocated_bytes > 0


@pytest.mark.parametrize("mode,fp8", [("PT-AMP", None), ("TE-BF16", None),
                                      ("TE-FP8", FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max"))])
def test_cuda_graphs_train_like_eager(mode, fp8):
    """Graphed steps must follow the eager loss curve (the BRIEF's naive-FP8-capture trap)."""
    from tebench.worker.case import run_case

    eager = _per_step(run_case(_small_gpt_case(mode, fp8), DEV, lambda *a: None))
    graphed = _per_step(run_case(_small_gpt_case(mode, fp8, graphs=True), DEV, lambda *a: None))
    assert abs(graphed[-1] - eager[-1]) / eager[-1] < 0.05, (eager, graphed)


def test_fp8_weight_transposes_follow_the_optimizer():
    """After FusedAdam steps, every cached FP8 weight transpose equals its data, transposed.

    TE's fused FP8 Adam kernel writes the row-wise data only; the dgrad GEMM on
    Hopper reads the transpose, so a stale one silently trains the wrong model.
    """
    from transformer_engine.pytorch.tensor.float8_tensor import Float8Tensor

    from tebench.worker.train import build_trainer

    case = _small_gpt_case("TE-FP8", FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max"), fp8_weights=True)
    batches = WORKLOADS["gpt"].batches(size_of(case), 3, 1, DEV)
    trainer = build_trainer(case, DEV, batches)
    for b in batches:
        trainer.step(b)
    weights = [p for p in trainer.eager.parameters() if isinstance(p, Float8Tensor)]
    cached = [p for p in weights if p._transpose is not None and not p._transpose_invalid]
    assert weights and "fp8_weight_transpose" in trainer.setup
    assert all(torch.equal(p._transpose, p._data.t()) for p in cached), trainer.setup


@pytest.mark.parametrize("graphs", [False, True])
def test_fp8_weights_train_like_high_precision_weights(graphs):
    """Delayed-scaling FP8 weights must follow the same case with fp32 weights, step by step."""
    from tebench.worker.case import run_case

    fp8 = FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max")
    ref = _per_step(run_case(_small_gpt_case("TE-FP8", fp8, graphs=graphs), DEV, lambda *a: None))
    raw = run_case(_small_gpt_case("TE-FP8", fp8, graphs=graphs, fp8_weights=True), DEV, lambda *a: None)
    got = _per_step(raw)
    worst = max(abs(g - r) / r for g, r in zip(got, ref))
    assert worst < 0.05, (ref, got)
    # The frozen check reads FP8 weights by their dequantized bits: every weight trained.
    assert raw.updates is not None and raw.updates.unchanged == 0, raw.updates


def test_cli_runs_gpu_cases_end_to_end(tmp_path, tebench_cli):
    out = tmp_path / "run"
    proc = tebench_cli("run", "--preset", "gpu-smoke", "--out", str(out), "--no-report",
                       "--only", "gpt/small/PT-AMP", "--only", "gpt/small/TE-FP8/delayed.HYBRID.h16.max",
                       "--only", "gpt/small/PT-FP32", check=True)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    cases = {r["case_id"]: r for r in records if r["type"] == "case"}
    assert cases["gpt/small/PT-AMP"]["status"] == "ok", proc.stderr
    assert cases["gpt/small/TE-FP8/delayed.HYBRID.h16.max"]["status"] == "ok"
    assert cases["gpt/small/TE-FP8/delayed.HYBRID.h16.max"]["parity"]["verdict"] == "pass"
    assert cases["gpt/small/PT-AMP"]["device"]["type"] == "cuda"


def test_prestarted_cuda_workers_speak_on_their_pipe(tmp_path, tebench_cli):
    """The pre-started path on CUDA: progress on the protocol pipe (the runner sees "measure" and stops
    the next workers beside launch-bound timed steps), stdout and stderr in the case's log."""
    from tebench.run.prestart import launch_bound

    out = tmp_path / "run"
    only = ["gpt/small/PT-FP32", "gpt/small/PT-AMP", "gpt/small/TE-BF16", "gpt/small/TE-FP8/delayed.HYBRID.h16.max"]
    tebench_cli("run", "--preset", "gpu-smoke", "--out", str(out), "--no-report", "--launch", "prestarted",
                *(a for cid in only for a in ("--only", cid)), check=True)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    cases = [r for r in records if r["type"] == "case"]
    assert [r["status"] for r in cases] == ["ok"] * len(only), [r.get("reason") for r in cases]
    assert [r["launch"]["method"] for r in cases][1:] == ["prestarted"] * (len(only) - 1)
    bound = [launch_bound((r["warmup"]["step_ms"] or [None])[-1]) for r in cases]
    for k, rec in enumerate(cases[1:], start=1):
        log = (out / rec["log"]).read_text()
        assert "pre-started worker pid" in log and '"event": "progress"' not in log and '"event": "ready"' not in log
        # Its worker existed through the previous case's timed steps and was stopped if that case was
        # launch-bound (the runner knows it only from the "measure" message on the pipe); it can have
        # been stopped only beside launch-bound cases.
        paused = rec["launch"]["paused_s"] > 0
        assert (not bound[k - 1] or paused) and (not paused or any(bound[:k])), (bound, rec["launch"])


def test_cuda_case_records_energy_power_and_clocks(tmp_path, tebench_cli):
    """NVML's energy counter over the timed steps, the power limit and the clocks, in the case's record."""
    out = tmp_path / "run"
    tebench_cli("run", "--preset", "gpu-smoke", "--out", str(out), "--no-report", "--only", "gpt/small/PT-AMP",
                check=True)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    case = next(r for r in records if r["type"] == "case")
    energy = case["energy"]
    print("\nenergy:", json.dumps(energy))
    assert energy.get("unavailable") is None, energy
    assert energy["method"] in ("counter", "power_integral")
    assert energy["energy_j"] > 0 and energy["j_per_step"] > 0 and energy["tokens_per_j"] > 0
    assert 0 < energy["avg_power_w"] <= 1.2 * energy["power_limit_w"]
    assert energy["samples"] > 0 and 0 < energy["sm_clock_mhz"]["p50"] <= energy["max_sm_clock_mhz"]
    # Joules over the window agree with average power times its length (the counter against the samples).
    assert energy["energy_j"] == pytest.approx(energy["avg_power_w"] * energy["window_s"], rel=0.5)


# --- Llama workload -----------------------------------------------------------

def _llama_size(**kw):
    from tebench.worker.models.llama import LlamaSize

    # 8 query heads on 2 key/value heads: a grouping mistake changes which V each head reads.
    base = dict(vocab=512, d_model=256, heads=8, kv_heads=2, layers=2, ffn=512, seq=128, batch=4, rope_theta=10000.0)
    return LlamaSize(**{**base, **kw})


def test_llama_te_block_matches_pytorch_block():
    size = _llama_size()
    idx = torch.randint(0, size.vocab, (size.batch, size.seq), device=DEV)
    assert _same_function("llama", size, idx) < 0.02


def test_llama_rope_angles_are_te_rotary_position_embedding():
    try:
        from transformer_engine.pytorch.attention.rope import RotaryPositionEmbedding
    except ImportError:  # older TE: one attention module
        from transformer_engine.pytorch.attention import RotaryPositionEmbedding

    from tebench.worker.models.llama import rope_angles

    size = _llama_size(rope_theta=500000.0)
    te_angles = RotaryPositionEmbedding(size.head_dim, rotary_base=size.rope_theta)(size.seq)
    assert te_angles.shape == (size.seq, 1, 1, size.head_dim)
    torch.testing.assert_close(te_angles.float().cpu(), rope_angles(size), rtol=1e-6, atol=1e-4)


def test_llama_te_layer_computes_the_reference_and_not_its_mistakes():
    """TE's layer against the plain formulation of tests/llama_reference.py, and against its mistakes.

    Attention and the MLP are sharpened (Q/K/V and fc1 weights x6): at the
    canonical init attention is nearly uniform and RoPE or grouping would
    barely change the output. bf16 TE vs the fp32 reference: the correct
    formulation must be several times closer than any mistaken one.
    """
    import llama_reference as ref

    wl = WORKLOADS["llama"]
    size = _llama_size()
    te_model = wl.build(size, "te", DEV, seed=3)
    params = dict(wl.canonical_params(te_model, size, "te"))
    with torch.no_grad():
        for name, p in params.items():
            if name.endswith(("qkv.weight", "fc1.weight")):
                p.mul_(6.0)
    gen = torch.Generator(device=DEV).manual_seed(0)
    idx = torch.randint(0, size.vocab, (2, size.seq), device=DEV, generator=gen)
    with torch.no_grad():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            got = te_model(idx).float()
        fp32 = {n: p.detach().float() for n, p in params.items()}
        errors = {m: _rel_err(got, ref.logits(fp32, size, idx, **kw)) for m, kw in {
            "correct": {}, "gqa-modulo": {"grouping": "modulo"}, "rope-interleaved": {"rope": "interleaved"},
            "swiglu-halves": {"gate": "second"}}.items()}
    assert errors["correct"] < 0.05, errors
    assert all(errors[m] > max(0.1, 3 * errors["correct"]) for m in errors if m != "correct"), errors


def test_llama_interleaved_qkv_layout_is_detected():
    """The same canonical weights read as TE's interleaved QKV layout must not match the PyTorch twin."""
    import transformer_engine.pytorch as te

    from tebench.worker.models.base import canonical_shapes, init_canonical, translate_names
    from tebench.worker.models.llama import RMS_EPS, TE_BLOCK_NAMES, Llama, LlamaStack, LlamaWorkload

    wl = WORKLOADS["llama"]
    size = _llama_size()
    pt = wl.build(size, "pt", DEV, seed=5)
    with torch.device(DEV):
        layers = [te.TransformerLayer(size.d_model, size.ffn, size.heads, num_gqa_groups=size.kv_heads,
                                      layernorm_epsilon=RMS_EPS, hidden_dropout=0.0, attention_dropout=0.0,
                                      normalization="RMSNorm", activation="swiglu", bias=False,
                                      fuse_qkv_params=True, qkv_weight_interleaved=True,  # the mistake
                                      attn_input_format="bshd", self_attn_mask_type="causal",
                                      layer_number=i + 1, params_dtype=torch.float32, device=DEV)
                  for i in range(size.layers)]
        wrong = Llama(size, LlamaStack(size, layers, "te"))
    shapes = canonical_shapes(lambda: LlamaWorkload()._pt(size))
    init_canonical(translate_names(wrong, TE_BLOCK_NAMES, shapes), 5, wl._init_rule(size))
    idx = torch.randint(0, size.vocab, (size.batch, size.seq), device=DEV)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        assert _rel_err(wrong(idx), pt(idx)) > 0.05


def test_llama_te_no_causal_mutation_reaches_the_te_layers():
    wl = WORKLOADS["llama"]
    size = _llama_size()
    model = wl.build(size, "te", DEV, seed=2)
    idx = torch.randint(0, size.vocab, (size.batch, size.seq), device=DEV)
    changed = idx.clone()
    changed[:, -1] = (changed[:, -1] + 1) % size.vocab
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        before = _rel_err(model(changed)[:, :-1], model(idx)[:, :-1])
        assert wl.mutate(model, "no-causal", "te")
        after = _rel_err(model(changed)[:, :-1], model(idx)[:, :-1])
    assert before < 1e-3 < after, (before, after)


def _llama_case(mode: str, fp8: FP8Options | None = None, **kw) -> Case:
    import dataclasses

    size = _llama_size(batch=8)
    return Case(workload="llama", size="small", mode=mode, dims=dataclasses.asdict(size), fp8=fp8,
                settings=Settings(steps=10, warmup=3, lr=2e-3, profile_steps=2), **kw)


@pytest.mark.parametrize("mode,fp8", [("PT-AMP", None), ("TE-BF16", None),
                                      ("TE-FP8", FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max")),
                                      ("TE-FP8", fp8_options("current", "HYBRID", None, None))],
                         ids=["PT-AMP", "TE-BF16", "TE-FP8-delayed", "TE-FP8-current"])
def test_llama_cuda_graphs_train_like_eager(mode, fp8):
    """Every mode trains the Llama stack, and capturing it (rotary angles included) changes nothing."""
    from tebench.worker.case import run_case

    eager = run_case(_llama_case(mode, fp8), DEV, lambda *a: None)
    graphed = run_case(_llama_case(mode, fp8, graphs=True), DEV, lambda *a: None)
    e, g = _per_step(eager), _per_step(graphed)
    assert e[-1] < e[0] and abs(g[-1] - e[-1]) / e[-1] < 0.05, (e, g)
    assert eager.validation and eager.validation.greedy_accuracy is not None


def test_llama_compiled_pytorch_trains_like_eager():
    from tebench.worker.case import run_case

    eager = _per_step(run_case(_llama_case("PT-AMP"), DEV, lambda *a: None))
    compiled = _per_step(run_case(_llama_case("PT-AMP+compile"), DEV, lambda *a: None))
    assert abs(compiled[-1] - eager[-1]) / eager[-1] < 0.05, (eager, compiled)


# --- mutation self-tests of the TE modes (tests/unit/worker/test_mutations.py runs the PyTorch ones on the CPU) ---

TE_MUTATION_SIZE = GPTSize(vocab=32, d_model=64, heads=4, layers=2, ffn=128, seq=32, batch=16)
TE_MUTATION_STEPS = 160
# E4M3 for gradients too: there an unscaled (scale 1) quantization flushes them to zero.
DELAYED_CAL = FP8Options(recipe="delayed", format="E4M3", amax_history_len=16, amax_compute_algo="max", calibration_steps=8)


def _mutation_record(mode: str, fp8: FP8Options | None, mutation: str | None, monkeypatch) -> dict:
    import dataclasses

    from tebench.plan import faults
    from tebench.worker.case import run_case

    case = Case(workload="gpt", size="tiny", mode=mode, dims=dataclasses.asdict(TE_MUTATION_SIZE), fp8=fp8,
                settings=Settings(steps=TE_MUTATION_STEPS, warmup=0, lr=3e-3, profile_steps=0))
    if mutation:
        monkeypatch.setenv(faults.FAULT_ENV, f"{case.id}={mutation}")
    else:
        monkeypatch.delenv(faults.FAULT_ENV, raising=False)
    raw = run_case(case, torch.device("cuda"), lambda *a: None)
    return {"status": "ok", "round": 0, "case_id": case.id, "case": case.to_dict(), **raw.to_dict()}


@pytest.fixture(scope="module")
def te_judged():
    from tebench.analysis import parity
    from tebench.schema.records import CaseResult

    mp = pytest.MonkeyPatch()
    try:
        out = {"reference": _mutation_record("PT-FP32", None, None, mp),
               "PT-AMP": _mutation_record("PT-AMP", None, None, mp),
               "TE-BF16": _mutation_record("TE-BF16", None, None, mp),
               "TE-FP8 cal8": _mutation_record("TE-FP8", DELAYED_CAL, None, mp)}
        for m in ("no-causal", "swap-layout", "freeze-layer", "lr-x10", "leak-next", "init-default"):
            out[f"TE-BF16 {m}"] = _mutation_record("TE-BF16", None, m, mp)
        out["TE-FP8 fp8-scale-one"] = _mutation_record("TE-FP8", DELAYED_CAL, "fp8-scale-one", mp)
    finally:
        mp.undo()
    typed = {name: CaseResult.from_dict(r) for name, r in out.items()}
    parity.attach(list(typed.values()))
    out = {name: r.to_dict() for name, r in typed.items()}
    print("\nTE mutation verdicts:")
    for name, r in out.items():
        print(f"  {name:<24} {r['parity']['verdict']:<10} {r['parity'].get('reason', '')[:200]}")
    return out


@pytest.mark.parametrize("name", ["TE-BF16", "TE-FP8 cal8"])
def test_unmutated_te_modes_pass(te_judged, name):
    assert te_judged[name]["parity"]["verdict"] == "pass", te_judged[name]["parity"]["reason"]


@pytest.mark.parametrize("name", ["TE-BF16 no-causal", "TE-BF16 swap-layout", "TE-BF16 freeze-layer",
                                  "TE-BF16 lr-x10", "TE-BF16 leak-next", "TE-BF16 init-default",
                                  "TE-FP8 fp8-scale-one"])
def test_every_te_mutation_fails(te_judged, name):
    assert te_judged[name]["setup"].get("test_mutation"), "the mutation was not applied"
    assert te_judged[name]["parity"]["verdict"] == "fail", te_judged[name]["parity"]["reason"]


# --- the FP8 proof: an FP8 case whose GEMMs all ran in BF16 is refused -------------------------

FP8_PROOF_RECIPES = [FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max"), FP8Options(recipe="current", format="HYBRID")]


def _built(case: Case, raw) -> "CaseResult":  # noqa: F821
    from tebench.schema.environment import Environment
    from tebench.plan.schedule import Planned
    from tebench.run.record_builder import build_record

    env = Environment(device_type="cuda")
    return build_record(Planned(case, 0, None), raw, env, "gpu-test", 0.0, 1.0, None)


def run_built(case: Case, mutation: str | None, monkeypatch) -> "CaseResult":  # noqa: F821
    """Run ``case`` here (``mutation`` applied, or none) and build its record as the parent would."""
    from tebench.worker.case import run_case
    from tebench.plan import faults

    if mutation:
        monkeypatch.setenv(faults.FAULT_ENV, f"{case.id}={mutation}")
    else:
        monkeypatch.delenv(faults.FAULT_ENV, raising=False)
    return _built(case, run_case(case, torch.device("cuda"), lambda *a: None))


@pytest.mark.parametrize("fp8", FP8_PROOF_RECIPES, ids=lambda f: f.recipe)
@pytest.mark.parametrize("mutation", [None, "fp8-bypass"])
def test_fp8_proof_refuses_a_case_that_ran_no_fp8(fp8, mutation, monkeypatch):
    """profile_steps = 0 (the nightly's): the one extra step still proves or refuses FP8."""
    import dataclasses

    case = Case(workload="gpt", size="tiny", mode="TE-FP8", dims=dataclasses.asdict(TE_MUTATION_SIZE), fp8=fp8,
                settings=Settings(steps=8, warmup=2, lr=3e-3, profile_steps=0, validate=False))
    record = run_built(case, mutation, monkeypatch)
    proof = record.fp8_proof
    assert proof is not None and record.time_breakdown is not None
    if mutation is None:
        assert record.status == "ok", record.reason
        assert proof.verdict == "fp8" and proof.fp8_gemm_calls > 0 and proof.te_fp8 > 0, proof.note
    else:
        assert record.status == "failed" and proof.verdict == "no-fp8", proof.note
        assert "not an FP8 result" in record.reason and "bf16" in record.reason
        assert proof.fp8_gemm_calls == 0 and proof.te_fp8 == 0 and proof.te_high_precision > 0


# --- the zipf-markov task: the equivalence verdict with TE, and partial FP8 -----------------------

ZIPF_SIZE = GPTSize(vocab=32, d_model=64, heads=4, layers=2, ffn=128, seq=32, batch=16, task="zipf-markov")
ZIPF_STEPS = 240


def _zipf_record(mode: str, fp8: FP8Options | None, mutation: str | None, monkeypatch, seeds: int = 0) -> dict:
    import dataclasses

    from tebench.plan import faults

    case = Case(workload="gpt", size="tiny-zm", mode=mode, dims=dataclasses.asdict(ZIPF_SIZE), fp8=fp8,
                settings=Settings(steps=ZIPF_STEPS, warmup=0, lr=3e-3, profile_steps=0, reference_seeds=seeds))
    if mutation:
        monkeypatch.setenv(faults.FAULT_ENV, f"{case.id}={mutation}")
    else:
        monkeypatch.delenv(faults.FAULT_ENV, raising=False)
    return run_built(case, mutation, monkeypatch).to_dict()


@pytest.fixture(scope="module")
def zipf_judged():
    from tebench.analysis import parity
    from tebench.schema.records import CaseResult

    mp = pytest.MonkeyPatch()
    try:
        out = {"reference": _zipf_record("PT-FP32", None, None, mp, seeds=2),
               "TE-BF16": _zipf_record("TE-BF16", None, None, mp),
               "TE-FP8 cal8": _zipf_record("TE-FP8", DELAYED_CAL, None, mp),
               "TE-FP8 current": _zipf_record("TE-FP8", FP8Options(recipe="current", format="HYBRID"), None, mp)}
        for m in ("no-causal", "swap-layout", "freeze-layer", "lr-x10", "leak-next", "init-default"):
            out[f"TE-BF16 {m}"] = _zipf_record("TE-BF16", None, m, mp)
        out["TE-FP8 fp8-scale-one"] = _zipf_record("TE-FP8", DELAYED_CAL, "fp8-scale-one", mp)
    finally:
        mp.undo()
    typed = {name: CaseResult.from_dict(r) for name, r in out.items()}
    parity.attach(list(typed.values()))
    out = {name: r.to_dict() for name, r in typed.items()}
    print("\nzipf-markov verdicts:")
    for name, r in out.items():
        v = r.get("validation") or {}
        print(f"  {name:<24} {r['parity']['verdict']:<10} {r['parity'].get('reason', '')[:220]}")
        print(f"  {'':<24} structure ({v.get('structure_fp8')}): causal {v.get('causal_kl')} batch "
              f"{v.get('batch_kl')} context {v.get('context_kl')}")
    return out


def test_zipf_reference_trained_three_seeds(zipf_judged):
    ref = zipf_judged["reference"]
    assert ref["parity"]["verdict"] == "reference" and len(ref["loss"]["replicas"]) == 2
    assert ref["validation"]["heldout_loss"] > ref["validation"]["floor"]


@pytest.mark.parametrize("name", ["TE-BF16", "TE-FP8 cal8", "TE-FP8 current"])
def test_zipf_unmutated_te_modes_pass(zipf_judged, name):
    assert zipf_judged[name]["parity"]["verdict"] == "pass", zipf_judged[name]["parity"]["reason"]
    assert zipf_judged[name]["parity"]["rule"] == "equivalence"


@pytest.mark.parametrize("name", ["TE-BF16 no-causal", "TE-BF16 swap-layout", "TE-BF16 freeze-layer",
                                  "TE-BF16 lr-x10", "TE-FP8 fp8-scale-one"])
def test_zipf_every_te_mutation_fails(zipf_judged, name):
    assert zipf_judged[name]["setup"].get("test_mutation"), "the mutation was not applied"
    assert zipf_judged[name]["parity"]["verdict"] == "fail", zipf_judged[name]["parity"]["reason"]


def test_zipf_swap_layout_fails_the_context_check(zipf_judged):
    """TE's swapped layout attends over the batch: the predictions never read a sequence's own past."""
    swapped = zipf_judged["TE-BF16 swap-layout"]
    assert swapped["validation"]["context_kl"] < 1e-3
    assert "ignore the tokens before" in swapped["parity"]["reason"], swapped["parity"]["reason"]


def test_zipf_no_causal_is_below_the_floor(zipf_judged):
    assert "below the task's floor" in zipf_judged["TE-BF16 no-causal"]["parity"]["reason"]


def test_frozen_check_sees_te_layer_norm_updates(zipf_judged):
    """The bit-pattern hash: no TE parameter of a correctly trained model reads as unchanged."""
    reference = zipf_judged["reference"]["updates"]["unchanged"]
    for name in ("TE-BF16", "TE-FP8 cal8", "TE-FP8 current"):
        updates = zipf_judged[name]["updates"]
        assert updates["method"] == "bits" and updates["unchanged"] <= reference, updates


def test_partial_fp8_is_kept_out(monkeypatch):
    """Blocks after the first outside FP8: the proof is partial, the case stays ok with its reason."""
    import dataclasses

    size = GPTSize(vocab=32, d_model=64, heads=4, layers=4, ffn=128, seq=32, batch=16)
    case = Case(workload="gpt", size="tiny4", mode="TE-FP8", dims=dataclasses.asdict(size),
                fp8=FP8Options(recipe="delayed", format="HYBRID", amax_history_len=16, amax_compute_algo="max"),
                settings=Settings(steps=8, warmup=2, lr=3e-3, profile_steps=0, validate=False))
    full = run_built(case, None, monkeypatch)
    assert full.fp8_proof.verdict == "fp8", full.fp8_proof.note
    record = run_built(case, "fp8-partial", monkeypatch)
    print("\npartial FP8:", record.fp8_proof.note)
    assert record.status == "ok" and record.fp8_proof.verdict == "partial", record.fp8_proof.note
    assert "partial FP8" in record.reason and record.fp8_proof.outside_recipe


# --- "same structure, different training" with twins: the margin, not a gross failure, catches them ---------
# As tests/unit/worker/test_mutations.py on the CPU (PT-AMP there), with TE modes: the 1% margin, twins at fp32's last bit.


@pytest.fixture(scope="module")
def subtle_judged():
    """PT-FP32 with two twins; TE-BF16 and TE-FP8 current unmutated; each mutation of the class on TE-BF16."""
    import dataclasses

    from tebench.analysis import parity
    from tebench.plan import faults

    mp = pytest.MonkeyPatch()

    def record(mode: str, fp8: FP8Options | None, mutation: str | None, twins: int = 0):
        case = Case(workload="gpt", size="tiny-zm", mode=mode, dims=dataclasses.asdict(ZIPF_SIZE), fp8=fp8,
                    settings=Settings(steps=ZIPF_STEPS, warmup=0, lr=3e-3, profile_steps=0, reference_twins=twins))
        return run_built(case, mutation, mp)

    try:
        out = {"reference": record("PT-FP32", None, None, twins=2), "TE-BF16": record("TE-BF16", None, None),
               "TE-FP8 current": record("TE-FP8", FP8Options(recipe="current", format="HYBRID"), None)}
        for m in faults.SUBTLE:
            out[f"TE-BF16 {m}"] = record("TE-BF16", None, m)
    finally:
        mp.undo()
    parity.attach(list(out.values()))
    print("\nsame-structure mutation verdicts (twins):")
    for name, r in out.items():
        print(f"  {name:<22} {r.parity.verdict:<12} {(r.parity.reason or '')[:240]}")
    return out


def test_subtle_reference_twins_set_a_paired_floor(subtle_judged):
    ref = subtle_judged["reference"]
    assert ref.parity.verdict == "reference" and len(ref.loss.twins) == 2


@pytest.mark.parametrize("name", ["TE-BF16", "TE-FP8 current"])
def test_subtle_unmutated_te_modes_pass_or_are_honestly_inconclusive(subtle_judged, name):
    p = subtle_judged[name].parity
    assert p.verdict in ("pass", "inconclusive"), p.reason
    assert p.noise_paired is True and p.margin_share == pytest.approx(0.01)


@pytest.mark.parametrize("mutation", ["norm-eps", "dropout-on", "leak-small", "lr-quarter"])
def test_subtle_mutations_fail_on_te(subtle_judged, mutation):
    r = subtle_judged[f"TE-BF16 {mutation}"]
    assert r.setup.test_mutation, "the mutation was not applied"
    assert r.parity.verdict == "fail", r.parity.reason
