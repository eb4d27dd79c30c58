"""A comparison of two runs (``tebench compare``, ``tebench ab``) in Markdown: the headline, what changed,
everything else in ``<details>``. The verdicts come from :mod:`tebench.analysis.compare`; this module only
words them."""

from __future__ import annotations

import math

from tebench.analysis.compare import UNMEASURED, Comparison, Delta, unvouched_loss, verdict_text


def headline_icon(*, failing: bool, concern: bool, unknown: bool) -> str:
    """The icon that opens a comparison's headline (``compare``, ``ab``, ``history``): the one rule.

    🔴 a counted failure (``failing``); 🟡 advisory regressions, or changes beyond noise within the
    threshold (``concern``); ⚪ when something could not be told (``inconclusive``) or nothing was
    measured (``unknown``); 🟢 only when every judged case is unchanged, improved or faster.
    """
    if failing:
        return "🔴"
    if concern:
        return "🟡"
    if unknown:
        return "⚪"
    return "🟢"


PCT_SHOWN = 1e4
"""Changes beyond ±1,000,000% are shown as that bound: a ratio of tiny medians (1e-300 ms against 1e-310) is
finite but its 27 digits say nothing a reader can use."""


def _pct(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    change = value - 1
    if change > PCT_SHOWN:
        return f">+{PCT_SHOWN:.0%}"  # a ratio is positive: only growth is unbounded
    return f"{change:+.1%}"


def headline(c: Comparison, title: str = "tebench compare") -> list[str]:
    """The first line(s) of a comparison: what is known, in words a reader acts on in ten seconds
    (the icon: :func:`headline_icon`)."""
    fails, n_reg = c.failures, len(c.regressions)
    inconclusive, slower = c.count("inconclusive"), c.count("slower")
    icon = headline_icon(failing=bool(fails and c.counted), concern=bool(n_reg or fails or slower),
                         unknown=bool(inconclusive or not c.measured))
    counts = [f"{n_reg} regression(s)"] + [f"{c.count(v)} {v}" for v in ("slower", "improved", "faster")
                                            if c.count(v) or v == "improved"]
    if c.not_counted:
        counts.append(f"{len(c.not_counted)} gain(s) not counted")
    counts += [f"{c.count('unchanged')} unchanged", f"{inconclusive} inconclusive"]
    lines = [f"### {icon} {title}: " + ", ".join(counts)]
    if c.not_counted:
        lines.append(f"{len(c.not_counted)} case(s) improved or faster but not counted: their head does not pass "
                     "loss parity or its FP8 proof (the speed of a model that does not train the same is not a "
                     "gain; listed below).")
    if slower:
        lines.append(f"{slower} case(s) are slower beyond noise but within the {c.thresholds['time']:.0%} "
                     "threshold: not failing the gate, but real (listed below).")
    if inconclusive:
        # Only the inconclusive cases that lack rounds: a case with too few rounds can still be
        # judged on its other measures (or be missing), and "50 of 46" is no count.
        few = sum(1 for d in c.too_few_rounds if d.verdict == "inconclusive")
        unjudged = sum(1 for d in c.deltas if d.verdict == "inconclusive" and unvouched_loss(d))
        wide = "their intervals reach beyond the threshold: more rounds, or a quieter machine, narrow them"
        if not few:
            what = wide
        elif few == inconclusive:
            what = "all of them have too few rounds for a verdict: run with `--rounds 5` or more"
        else:
            what = (f"{few} of them have too few rounds for a verdict (run with `--rounds 5` or more); for the "
                    f"other {inconclusive - few}, " + wide)
        if unjudged == inconclusive:
            what = ("no loss-parity verdict of the head vouches for their loss (their reference mode did not run in "
                    "head): run the reference too")
        elif unjudged:
            what += (f"; {unjudged} of them also for their loss, which no loss-parity verdict of the head vouches for "
                     "(its reference mode did not run in head)")
        gate = ("they fail the gate (--fail-on-inconclusive)" if c.options.fail_on_inconclusive
                else "this gate passes without knowing (`--fail-on-inconclusive` makes them fail it)")
        lines.append(f"Can't tell for {inconclusive} case(s): {what}; {gate}.")
    return lines


def to_markdown(c: Comparison, title: str = "tebench compare") -> str:
    """GitHub-flavoured Markdown: headline, what changed, everything in <details>."""
    import pandas as pd

    from tebench.report import md_escape as esc, md_table

    advisory = [d for d in c.deltas if d.failing and not d.counted]
    lines = []
    lines += headline(c, title)
    extra = [f"{c.count(v)} {v}" for v in UNMEASURED if c.count(v)]
    if not c.measured:
        extra.insert(0, "no case was measured on both sides, so this comparison cannot pass (exit 2)")
    if advisory:
        extra.insert(0, f"{len(advisory)} of the regressions advisory (not failing the gate: "
                        + "; ".join(esc(f) for f in sorted({f for d in advisory for f in d.flags})) + ")")
    if c.options.fail_on_missing and c.count("missing-in-head"):
        extra.append("missing cases fail the gate (--fail-on-missing)")
    if extra:
        lines.append("Also: " + ", ".join(extra) + ".")
    if c.skipped:
        lines += ["", f"> ⚠️ **{len(c.skipped)} unusable line(s) skipped** (their cases are judged on the rest): "
                  + "; ".join(esc(x) for x in c.skipped[:5]) + (" …" if len(c.skipped) > 5 else "")]
    few = c.too_few_rounds
    if few:
        lines += ["", f"> ⚠️ **Too few rounds to separate run-to-run noise** for {len(few)} case(s) (fewer than "
                  f"{c.options.min_rounds} rounds of {c.options.min_steps}+ steps on a side): their step time is "
                  "`inconclusive`, whatever its size. Run with `--rounds 5` or more."]
    if not c.paired and any(d.p_value is not None for d in c.deltas):
        lines += ["", "> ℹ️ Base and head are separate runs: the rounds show each run's round-to-round noise, "
                  "but not an offset shared by all rounds of one run (machine state, other load, another day). "
                  "For a gate, `tebench ab` runs both sides interleaved and compares them round by round."]
    if c.env_details:
        lines.append("")
        if c.env_differs:
            lines.append("> ⚠️ **Base and head ran in different environments** ("
                         + ", ".join(esc(x) for x in c.env_details)
                         + "). Differences reflect the machine/software as much as the code; "
                         + ("they are counted as regressions (the environment is what is compared)."
                            if c.counted else "they are **not** counted as code regressions (exit 0)."))
        else:
            lines.append("> Environment differences: " + ", ".join(esc(x) for x in c.env_details) + ".")
    if c.limit_details:
        lines += ["", "> ⚠️ **Base and head ran at different power limits or clocks**: "
                  + "; ".join(esc(x) for x in c.limit_details) + ". "
                  + ("Their speed and energy changes are counted (--count-env-changes)."
                     if c.options.count_env_changes else
                     "Speed and energy regressions of the cases concerned are advisory, not failing the gate "
                     "(`--count-env-changes` counts them).")]
    lines.append("")

    energy = any(d.energy_ratio is not None for d in c.deltas)  # no column where no case has a reading

    def row(d: Delta) -> dict[str, str]:
        ci = d.time_ci
        return {"case": d.case_id, "device": d.device,
                "verdict": verdict_text(d),
                "step time": _pct(d.time_ratio),
                "CI": f"{_pct(ci[0])} … {_pct(ci[1])}" if ci else "–",
                "rounds": f"{d.rounds[0]}/{d.rounds[1]}" if d.rounds else "–",
                "tokens/s": _pct(d.tokens_ratio), "memory": _pct(d.memory_ratio),
                **({"J/token": _pct(d.energy_ratio)} if energy else {}),
                "Δ final loss": "–" if d.loss_change is None else f"{d.loss_change:+.4g}",
                "why": "; ".join(d.why + d.flags)}

    changed = [d for d in c.deltas if d.verdict != "unchanged"]
    if c.measured and all(d.verdict in ("unchanged", *UNMEASURED) for d in c.deltas):
        lines.append("Nothing changed beyond thresholds and noise" + (
            " in the cases measured on both sides." if changed else "."))
    if changed:
        lines.append(md_table(pd.DataFrame([row(d) for d in changed])))
    o = c.options
    lines += ["", f"<details><summary>All {len(c.deltas)} cases</summary>", "",
              md_table(pd.DataFrame([row(d) for d in c.deltas])), "", "</details>", "",
              "<details><summary>Method and inputs</summary>", "",
              f"- base: {esc(c.base)} ({esc(c.base_env.get('device'))}, "
              f"commit {esc(c.base_env.get('git_commit') or 'unknown: not run from a git checkout')})",
              f"- head: {esc(c.head)} ({esc(c.head_env.get('device'))}, "
              f"commit {esc(c.head_env.get('git_commit') or 'unknown: not run from a git checkout')})",
              "- thresholds: " + ", ".join(f"{k} {v:.1%}" for k, v in c.thresholds.items())
              + f"; alpha {o.alpha:g} across cases ({o.correction})",
              f"- {esc(c.method)}", "", "</details>", ""]
    return "\n".join(lines)
