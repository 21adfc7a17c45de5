"""summary.html in a real browser: headless Debian chromium driven by Selenium (no browser download).

Skips naming the install command where chromium can't be installed; CI sets
ORTCHECK_REQUIRE_BROWSER=1, so there a missing browser fails instead.
"""
import os

import matplotlib
import pytest

from ortcheck.envsetup import browser
from ortcheck.report.summary import write_summary

matplotlib.use("Agg")


@pytest.fixture
def driver():
    if not browser.installed():
        if os.environ.get("ORTCHECK_REQUIRE_BROWSER"):
            pytest.fail(f"no chromium here: run `{browser.INSTALL}`")
        pytest.skip(f"no chromium here: run `{browser.INSTALL}` (or python -m ortcheck.envsetup.browser)")
    webdriver = pytest.importorskip("selenium.webdriver")
    options = webdriver.ChromeOptions()
    options.binary_location = browser.CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--disable-dev-shm-usage"):
        options.add_argument(flag)
    chrome = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=browser.DRIVER))
    yield chrome
    chrome.quit()


def _report(folder):
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(3, 2))
    axes.plot([3, 2, 1])
    png = folder / "convergence" / "mlp.png"
    png.parent.mkdir(parents=True)
    figure.savefig(png)
    outcomes = [("suites/test_a.py::test_x", "reference", "pass", ""),
                ("suites/test_a.py::test_x", "ortmodule", "expected-fail", "a known finding"),
                ("suites/test_b.py::test_y[1]", "reference", "fail", "AssertionError: off by one")]
    summary = {"environment": {"impl": "all", "machine": "CPU A"},
               "outcomes": [{"property": p, "impl": i, "status": s, "detail": d} for p, i, s, d in outcomes],
               "convergence": [{"test": "suites/test_convergence.py::test_convergence[reference-mlp]", "status": "pass",
                                "convergence_parity": "within the oracle", "report_png": str(png)}],
               "memory_plans": []}
    write_summary(folder, summary, "ortcheck report (test)")
    return folder / "summary.html"


def test_the_html_report_renders_the_matrix_and_the_plots(driver, tmp_path):
    page = _report(tmp_path)
    driver.get(page.as_uri())
    assert driver.title == "ortcheck report (test)"
    by = pytest.importorskip("selenium.webdriver.common.by").By
    tables = driver.find_elements(by.CSS_SELECTOR, "table.matrix")
    assert len(tables) == 2  # one per suite
    cells = {(c.get_attribute("class"), c.text) for c in driver.find_elements(by.CSS_SELECTOR, "table.matrix td[class]")}
    assert cells == {("pass", "pass"), ("expected-fail", "xfail"), ("fail", "FAIL")}
    assert "off by one" in driver.find_element(by.ID, "failures").text
    width = driver.execute_script("const img = document.querySelector('img.plot');"
                                  "return img && img.complete ? img.naturalWidth : 0;")
    assert width > 0, "the convergence plot did not render"
    failed = driver.find_element(by.CSS_SELECTOR, "td.fail")
    assert failed.value_of_css_property("background-color") not in ("rgba(0, 0, 0, 0)", "transparent")


def test_the_history_page_renders_its_trend_and_stripes(driver, tmp_path):
    from ortcheck.cli import main
    from ortcheck.report.collector import Outcome

    for night, status in enumerate(["pass", "fail", "pass"], 1):
        outcomes = [Outcome("suites/test_a.py::test_x", "reference", status, "AssertionError: off" if status == "fail" else ""),
                    Outcome("suites/test_a.py::test_y", "reference", "pass", "")]
        write_summary(tmp_path / f"night-{night}", {"environment": {"impl": "reference", "device": "cpu", "machine": "CPU A",
                                                                   "finished": f"2026-11-0{night}T03:00:00+00:00"},
                                                   "outcomes": [o.__dict__ for o in outcomes], "convergence": [],
                                                   "memory_plans": []}, "night")
    db, page = tmp_path / "h.sqlite", tmp_path / "history.html"
    assert main(["history", "ingest", *(str(tmp_path / f"night-{n}") for n in (1, 2, 3)), "--history", str(db)]) == 0
    assert main(["history", "page", "--history", str(db), "--out", str(page)]) == 0
    driver.get(page.as_uri())
    by = pytest.importorskip("selenium.webdriver.common.by").By
    width = driver.execute_script("const img = document.querySelector('img.trend');"
                                  "return img && img.complete ? img.naturalWidth : 0;")
    assert width > 0, "the trend chart did not render"
    stripe = [c.text for c in driver.find_elements(by.CSS_SELECTOR, "table.stripes td[class]")]
    assert stripe == ["pass", "FAIL", "pass"]  # test_x changed; test_y did not, so it has no stripe
    assert "fixed" in driver.find_element(by.CSS_SELECTOR, "ul.events").text
