"""The checker's feedback measured on mutants (autograder.measure.mutants).

A sample of every step's single-point mutants runs through the harness here, as
the full population does in `python -m autograder mutants` (the committed table in
the README is that run's, tests/test_readme.py checks it): every one not
equivalent must fail, and most must name the line that was changed, none another
line, with one cause each.
"""


import pytest

from autograder.course.assignments import assignment
from autograder.measure import mutants
from autograder.run.kernel import template_arguments

# Two mutants of each step's exercise region, the same every run (spread over its rules).
STEPS = ["02", "03", "04", "05", "06", "07", "08"]
REGIONS = lambda name: assignment(name).regions  # noqa: E731


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    # The search for a line gets more of its CPU than a learner's 4 s: what this sample
    # finds then rests on the rules, not on how fast the machine running it is.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SGEMM_LOCALIZE_S", "20")
        return mutants.run(mutants.step_kernels(STEPS, REGIONS), "cpu", jobs=1, sample=2)


def test_every_mutant_of_the_sample_fails_unless_it_is_equivalent(rows):
    alive = [r for r in rows if r.outcome == "survived"]
    assert not alive, [(r.kernel, r.line, r.rule, r.before, r.after) for r in alive]
    assert all(r.cause for r in rows if r.outcome == "equivalent")  # with its reason


def test_most_mutants_name_their_line_and_none_another(rows):
    killed = [r for r in rows if r.outcome == "killed"]
    wrong = [(r.kernel, r.line, r.named, r.cause) for r in killed if r.wrong_lead]
    assert not wrong, wrong
    found = sum(r.localized for r in killed)
    assert found >= 0.75 * len(killed), [(r.kernel, r.line, r.rule, r.cause) for r in killed
                                          if not r.localized]  # fmt: skip


def test_one_mutant_gives_one_cause(rows):
    killed = [r for r in rows if r.outcome == "killed"]
    assert all(r.groups == 1 for r in killed), [(r.kernel, r.line, r.cause) for r in killed
                                                 if r.groups != 1]  # fmt: skip


def test_the_rows_survive_a_round_trip(rows, tmp_path):
    mutants.write(rows, tmp_path / "rows.csv")
    assert mutants.read(tmp_path / "rows.csv") == rows


def test_every_survivor_judged_by_hand_is_still_a_mutant_of_its_kernel():
    # A kernel changed since its survivors were read voids their judgement: the row
    # must then be read again (or removed), not left to match nothing.
    import csv

    with open(mutants.JUDGED, newline="") as f:
        judged = list(csv.DictReader(f))
    kernels = {k.spec.filename: k for k in mutants.step_kernels(STEPS + ["09"], REGIONS)}
    # Rows for kernels by others are read where their sources are (never in the repository).
    for row in (r for r in judged if r["file"] in kernels):
        kernel = kernels[row["file"]]
        lines = {" ".join(spec.source.splitlines()[int(row["line"]) - 1].split())
                 for e, spec in mutants.mutants_of(kernel) if e.line == int(row["line"])}  # fmt: skip
        assert row["mutated"] in lines, row


@pytest.mark.parametrize("declared", ["int", "const int", "unsigned int", "uint"])
def test_two_tile_parameters_of_one_value_are_told_equal_however_they_are_declared(declared):
    # `template <const int BM, ...>` (how most public kernels declare their tiles) was
    # read as no template: its TN-for-BK mutant, where both are 8, then rested on
    # comparing PTX alone, and was once counted a survivor.
    source = f"template <{declared} BK, {declared} TN> __global__ void k(float *C) {{}}"
    assert template_arguments(source, "k<8, 8>") == {"BK": 8, "TN": 8}


def test_a_mutant_of_an_expression_over_several_lines_is_localized_on_any_of_them():
    # leimao's C_row_idx is a sum over four lines; its last + made * is repaired in the
    # operand that starts a line below the sum (named there), on the H200 host a wrong lead.
    from autograder.judge.edits import Edit

    before = "blockIdx.y * BM +\n    threadIdx.x / (BN / TN) *\n        TM +\n    row"
    sum_over_four = Edit(0, len(before), before.replace("TM +", "TM *"), 218, "arithmetic", before)
    assert list(mutants._lines(sum_over_four)) == [218, 219, 220, 221]
    one_line = Edit(0, 1, "-", 30, "arithmetic", "+")
    assert list(mutants._lines(one_line)) == [30]
