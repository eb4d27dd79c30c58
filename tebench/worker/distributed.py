"""Data-parallel GPT cases under torchrun: DDP, or FSDP2 where torch has it.

Every rank runs the same case on its own GPU (gloo on the CPU). Rank r draws
its own batches; rank 0 keeps the case's seed, so its loss curve stays
comparable with the single-GPU reference on the same data. For TE-FP8 the
amaxes are reduced across ranks by TE itself (its autocast's amax reduction
group). Per-rank step times are gathered to rank 0, which writes the result.
"""

from __future__ import annotations

from typing import Any

import torch

from tebench.schema.records import Case
from tebench.schema.records import Distributed, Measurements, median as median_of
from tebench.worker.case import Progress, run_case
from tebench.worker.seeds import derive_seed
from tebench.worker.models import WORKLOADS
from tebench.workloads import size_of


def _wrap(case: Case, device: torch.device, built: list[torch.nn.Module]):
    def wrap(model: torch.nn.Module) -> torch.nn.Module:
        built.append(model)
        if case.parallel == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP

            return DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        from torch.distributed.fsdp import fully_shard

        # Shard block by block, then the rest: the usual FSDP2 layout.
        blocks: Any = model.blocks  # the workload's stack, an nn.Sequential (torch types it Tensor | Module)
        for block in blocks:
            fully_shard(block)
        fully_shard(model)
        return model

    return wrap


def run_distributed(case: Case, device: torch.device, progress: Progress) -> Measurements:
    """Run ``case`` on every rank; rank 0 returns the measurements plus per-rank figures."""
    import torch.distributed as dist

    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, device_id=device if device.type == "cuda" else None)
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        seed = derive_seed(case.settings.seed, "rank", rank)
        group = dist.group.WORLD if case.fp8 is not None else None
        built: list[torch.nn.Module] = []
        raw = run_case(case, device, progress, wrap=_wrap(case, device, built), amax_group=group, data_seed=seed)
        timing, mem, loss = raw.timing, raw.memory, raw.loss
        assert timing is not None and mem is not None and loss is not None, "run_case measures all three"
        median = median_of(timing.samples_ms)
        tokens = WORKLOADS[case.workload].tokens_per_step(size_of(case))
        mine = {
            "rank": rank,
            "device": str(device),
            "median_ms": median,
            "tokens_per_s": tokens / (median / 1000.0),
            "peak_allocated_bytes": mem.peak_allocated_bytes,
            "peak_rss_bytes": mem.peak_rss_bytes,
            "final_loss": loss.per_step[-1],
        }
        if case.parallel == "ddp":
            # DDP keeps full replicas: after training they must be identical on
            # every rank, or gradients were not synchronised.
            with torch.no_grad():
                mine["param_checksum"] = float(sum(p.double().sum() for p in built[0].parameters()))
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, mine)
        raw.distributed = Distributed.from_dict({
            "parallel": case.parallel,
            "world_size": world,
            "backend": backend,
            "per_rank": gathered,
            "aggregate_tokens_per_s": sum(r["tokens_per_s"] for r in gathered),
            "replicas_in_sync": (len({r["param_checksum"] for r in gathered}) == 1
                                 if case.parallel == "ddp" else None),
            "note": "each rank processes its own batch of tokens_per_step; rank 0's loss curve is recorded",
        })
        dist.barrier()
        return raw
    finally:
        dist.destroy_process_group()
