"""What the report says about each run: its machine, how to reproduce it, how it started its cases."""

from __future__ import annotations

from typing import Any

from tebench.plan.matrix import exclusion_text
from tebench.report.load import Source
from tebench.schema.environment import Environment
from tebench.schema.records import RunHeader


def cost_header(src: Source) -> dict[str, Any]:
    """How a run started its cases and the compile cache it began with (older runs: unknown)."""
    cache = src.header.compile_cache
    launch = src.header.launch or "unrecorded"
    if launch == "prestarted" and src.header.prestart_depth:
        stops = {True: ", stopped beside launch-bound timed steps", False: ", never stopped", None: ""}
        launch += f" ({src.header.prestart_depth} per device{stops[src.header.prestart_pause]})"
    return {"label": src.label, "launch": launch,
            "cache": (cache.state if cache is not None else None) or "unrecorded",
            "cache_dir": cache.dir if cache is not None else None}


def environment(src: Source) -> list[tuple[str, str]]:
    """The run-info rows of the machine a run ran on: GPUs, driver, clocks, versions, relevant variables."""
    env = src.env
    setup = next((r.setup for r in src.records if r.setup is not None), None)
    peak = env.peak_tflops
    rows = [
        ("device", src.device),
        ("GPUs", "; ".join(f"{g.index}: {g.name}, CC {g.capability[0]}.{g.capability[1]}, "
                          f"{g.memory_bytes / 2**30:.0f} GiB, {g.multiprocessors} SMs" for g in env.gpus) or "none"),
        ("driver / CUDA / cuDNN", clip_words(f"{env.driver or '–'} / {env.cuda or '–'} / {env.cudnn or '–'}")),
        ("GPU clocks / power", "; ".join(f"GPU {i}: max SM {c.get('clocks.max.sm')} MHz, max mem "
                                        f"{c.get('clocks.max.mem')} MHz, power limit {c.get('power.limit')} W"
                                        for i, c in env.gpu_clocks.items()) or "–"),
        ("torch / Transformer Engine", clip_words(f"{env.torch or '–'} / "
                                                  f"{env.te or 'not available: ' + str(env.te_error or '–')}")),
        ("Python / CPU", f"{env.python or '–'} / {env.cpu or '–'} ×{env.cpu_count or '?'}"),
        ("host", str(env.hostname or "–")),
        ("MFU peak", f"{peak.bf16} TFLOP/s dense BF16 ({peak.source})" if peak else "unknown GPU: no MFU"),
        ("master weights", _recorded(setup.master_weights if setup is not None else None)),
        ("optimizer", _recorded(setup.optimizer if setup is not None else None)),
        ("relevant variables", ", ".join(f"{k}={v}" for k, v in env.env_vars.items()) or "none set"),
    ]
    return rows


ENV_CELL_CHARS = 200
"""Characters an environment cell shows. The probe stores error messages cut at a fixed length, often
mid-word ("… a conflicting cuDNN in LD_LIBRA"); the cell ends at a word instead, marked "…"."""


def clip_words(text: str, limit: int = ENV_CELL_CHARS) -> str:
    """``text`` up to ``limit`` characters, cut after a whole word and marked "…" where it is longer."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(None, 1)[0]
    return cut.rstrip(" ,;:") + " …"


def _recorded(value: Any, default: Any = "–") -> Any:
    """A header value as the run info shows it: ``default`` where it was not recorded (absent or null)."""
    return default if value is None else value


def _devices_text(devices: list[str] | None, env: Environment) -> str:
    """``--devices`` as the run had it; on a machine without a CUDA GPU its indices were CPU slots."""
    listed = _listed(devices)
    if not listed:
        return "default"
    return listed if env.device_type == "cuda" else f"{listed} (no CUDA GPU: CPU slots, one case each)"


def _listed(value: Any) -> str:
    """A header field for people: a list as "0, 1" (not "['0', '1']"), a mapping as "k=v", None as ""."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def reproduce(src: Source) -> list[tuple[str, str]]:
    """The run-info rows that say how to run it again: command, matrix and its hashes, commit, file."""
    head, env = src.header, src.env
    matrix = head.matrix
    name, source, sha256, text_sha256 = ((matrix.name, matrix.source, matrix.sha256, matrix.text_sha256)
                                         if matrix is not None else (None, None, None, None))
    commit = env.git_commit or "not a git checkout"
    if env.git_dirty:
        commit += " (with uncommitted changes)"
    return [
        ("command", " ".join(head.command or []) or "–"),
        ("matrix", f"{_recorded(name)} ({_recorded(source)})"),
        ("matrix sha256 (resolved / file)", f"{_recorded(sha256)} / {_recorded(text_sha256)}"),
        ("run id / created", f"{_recorded(head.run_id)} / {_recorded(head.created)}"),
        ("rounds / shard / devices", f"{_recorded(head.rounds, 1)} / {_listed(head.shard) or 'whole matrix'} / "
                                     f"{_devices_text(head.devices, env)}"),
        ("tebench", f"{head.tebench or env.tebench or '–'} @ {commit}"),
        ("results file", src.path),
    ] + _excluded(head)


def _excluded(head: RunHeader) -> list[tuple[str, str]]:
    """The run-info row of the matrix's exclusions; none for a header from before they were recorded."""
    if head.excluded is None:  # the runner always writes the list, empty where nothing was excluded
        return []
    rules = head.excluded
    return [("excluded by the matrix", "; ".join(exclusion_text(e.to_dict()) for e in rules) if rules else "nothing")]
