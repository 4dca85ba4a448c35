"""A reason for failure is said once: failing cases are grouped by cause, under the
verdict, in the report, its notebook table and a grade's feedback alike."""

from autograder.judge import checker, verdicts
from autograder.judge.causes import by_cause, cause_of
from autograder.judge.checker import CaseResult, Shape

EVERY = "every element of C is wrong"


def wrong(shape: Shape, beta: float, value: float, message: str = EVERY) -> CaseResult:
    return CaseResult(shape, beta, False, f"{message} (first: (0, 0) is {value}, should be 1.5)")


def one_mistake() -> checker.Report:
    """A kernel with one mistake: right on the smallest shape, wrong the same way on the rest."""
    report = checker.Report("k", "the CPU (g++, no timings; confined)", seed=1)
    smallest, *rest = checker.SMALL + checker.MEDIUM
    report.cases = [CaseResult(smallest, b, True, max_error=0.1) for b in (0.0, checker.BETA)]
    report.cases += [wrong(s, b, -2.5 * i) for i, s in enumerate(rest) for b in (0.0, checker.BETA)]
    return report


def test_messages_that_differ_only_in_their_numbers_are_one_cause():
    assert cause_of(f"{EVERY} (first: (3, 4) is -7.25, should be 1e+30)") == EVERY
    assert cause_of("the last 9 columns of 1001x777 (first: (0, 5), never written)") == (
        cause_of("the last 31 columns of 17x19 (first: (2, 1), never written)")
    )
    assert cause_of("wrote 3 floats past the end of C") != cause_of("read outside A")


def test_causes_come_most_frequent_first_with_the_first_case_as_example():
    cases = [wrong(checker.SMALL[1], 0.0, 1.0, "element (0, 5) is wrong")]
    cases += [wrong(s, 0.0, float(i)) for i, s in enumerate(checker.SMALL[2:5])]
    first, second = by_cause(cases)
    assert str(first) == (
        f"3 of 4 cases (257x1x33, beta=0 and 2 more): {EVERY} (first: (0, 0) is 0.0, should be 1.5)"
    )
    assert str(second).startswith("1x300x70, beta=0: element (0, 5) is wrong")


def test_the_report_leads_with_the_verdict_and_says_one_cause_once():
    report = one_mistake()
    lines = str(report).splitlines()
    assert lines[0] == "FAILED: 2 of 22 cases correct"
    assert lines[1].startswith("  [1] 20 of 22 cases (1x300x70, beta=0 and 19 more): " + EVERY)
    assert str(report).count(EVERY) == 1
    assert "  FAIL 1001x777x513, beta=-0.75   [1]" in lines
    assert report.text(verbose=True).count(EVERY) == 21  # and each case's own message


def test_a_notebook_shows_a_screenful_and_every_case_one_click_away():
    html = one_mistake()._repr_html_()
    summary, table = html.split("<details>")
    assert summary.startswith("<p><b>FAILED: 2 of 22 cases correct</b></p>")
    assert summary.count("<li>") == 1 and len(summary) < 400, summary
    assert table.count("<tr>") == 22 and table.endswith("</table></details>")


def test_feedback_lists_five_causes_at_most_and_counts_the_failing_cases_it_leaves_out():
    report = checker.Report("k", "cpu", seed=1)
    report.cases = [
        wrong(s, 0.0, 1.0, f"cause number {'i' * n}") for n, s in enumerate(checker.SMALL)
    ]
    problem = verdicts._problem(report, verdicts.SUITES["odd"]).splitlines()
    assert len(problem) == verdicts.MAX_CAUSES + 1
    assert problem[-1] == f"… and {len(checker.SMALL) - verdicts.MAX_CAUSES} more failing cases"
