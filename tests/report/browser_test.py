#!/usr/bin/env python3
"""The report page (report/page.html) in a real browser: Debian's headless Chromium, driven by
chromedriver through Selenium (part of tools/test.sh; docs/report.md).

    tests/report/browser_test.py BUILD_DIR [--report FILE] [--screenshot PNG] [--keep DIR]

For the report of a short real run (winter_games on a small model, or --report FILE):
  - the page loads from disk with no console error and no network request;
  - the loss curve has one point per logged step (as many as the run's epochs), and hovering it
    reads out the values at a step;
  - choosing another layer and head in the attention selectors draws another map;
  - clicking a node of the graph names its op and module in the detail panel;
  - a screenshot of the page (--screenshot).
A live report (a run in progress) reloads itself: rewritten with more steps, the open page shows
them within its reload interval with the attention selection kept, and once the run is finished
the page says so and stops reloading.
A run whose loss turned NaN (long_report --diverge) says it stopped by an error, not "finished",
names the NaN and its step in the loss chart and shows "nan" in the module table; its Latin-1 title
is shown with U+FFFD and noted in the header.
Then a generated 10,000-step report, whose title and token labels hold markup, loads in under
2 s with its curves drawn from min/max buckets and its labels shown as text; and
tools/report_compare puts both runs on one page, their loss curves overlaid.
Prints one line per check and "report browser test: PASS" or "... FAIL" last; exits 1 on failure.
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

EPOCHS = 12
LOAD_LIMIT_S = 2.0
failures = []


def check(ok, what):
    print(("  ok   " if ok else "  FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    # As root in a container, with no network: no sandbox, no GPU, and none of the background
    # connections (updates, sync, QUIC probes) a fresh profile would try.
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,2400", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def requests(driver):
    """(url, url of the document that asked) of each request since the last call (the performance
    log's Network events)."""
    found = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            found.append((message["params"]["request"]["url"], message["params"].get("documentURL", "")))
    return found


def load(driver, path):
    url = "file://" + urllib.parse.quote(os.path.abspath(path))
    driver.get("about:blank")  # chromedriver's start page loads its own chrome:// resources: let it go
    requests(driver), driver.get_log("browser")
    start = time.perf_counter()
    driver.get(url)  # returns after the load event: the page's script has run
    return url, time.perf_counter() - start


def page_data(driver):
    return driver.execute_script("return JSON.parse(document.getElementById('xtgrad-report-data').textContent)")


def check_short_run(driver, report, screenshot, epochs):
    url, _ = load(driver, report)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    check(not errors, "no console error" + ("" if not errors else f": {errors[:3]}"))
    # Anything the page asked for but itself, and any request to the network from anywhere.
    elsewhere = [u for u, document in requests(driver)
                 if (document == url and u != url and not u.startswith(("data:", "blob:")))
                 or u.startswith(("http:", "https:", "ws:", "wss:", "ftp:"))]
    check(not elsewhere, "no network request (only the page's own file)" + ("" if not elsewhere else f": {elsewhere[:5]}"))

    data = page_data(driver)
    steps = len(data["scalars"]["loss"]["step"])
    points = int(driver.find_element(By.CSS_SELECTOR, "#loss-svg polyline.series[data-name='loss']").get_attribute("data-points"))
    check(points == steps, f"loss curve: {points} points for {steps} logged steps")
    ActionChains(driver).move_to_element(driver.find_element(By.ID, "loss-svg")).perform()
    readout = [t.text for t in driver.find_elements(By.CSS_SELECTOR, "#loss-svg text") if t.text.startswith("step ")]
    shown = None
    if len(readout) == 1 and ": loss " in readout[0]:  # "step 6: loss 1.617"
        head, value = readout[0].split(": loss ")
        logged = data["scalars"]["loss"]
        exact = logged["value"][logged["step"].index(int(head.split()[1]))]
        shown = abs(float(value) - exact) <= 1e-3 * abs(exact)
    check(bool(shown), f"hovering the loss curve reads out the logged value: {readout[:1]}")
    if epochs:  # our own run: we know how many epochs it had
        check(steps == epochs, f"the run logged {steps} steps, its --epochs was {epochs}")

    svg = driver.find_element(By.ID, "attn-svg")
    before = (svg.get_attribute("data-map"), [c.get_attribute("fill") for c in svg.find_elements(By.CSS_SELECTOR, "rect.cell")])
    layers = Select(driver.find_element(By.ID, "attn-layer"))
    layers.select_by_index(len(layers.options) - 1)
    heads = Select(driver.find_element(By.ID, "attn-head"))
    heads.select_by_index(len(heads.options) - 1)
    svg = driver.find_element(By.ID, "attn-svg")
    after = (svg.get_attribute("data-map"), [c.get_attribute("fill") for c in svg.find_elements(By.CSS_SELECTOR, "rect.cell")])
    check(after[0] != before[0] and after[1] != before[1],
          f"attention selectors: {before[0]} -> {after[0]}, the cells' colours changed")
    kinds = Select(driver.find_element(By.ID, "attn-kind"))
    masked_kind = next((o.text for o in kinds.options if "decoder self" in o.text), None)
    if masked_kind:
        kinds.select_by_visible_text(masked_kind)
        marks = driver.find_elements(By.CSS_SELECTOR, "#attn-svg path.masked")
        check(len(marks) > 0, f"{masked_kind}: {len(marks)} masked cells marked")

    # the page as it opens below the header (the graph collapsed), before the graph checks click it
    if screenshot:
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(screenshot)
        check(os.path.getsize(screenshot) > 20000, f"screenshot {screenshot} ({os.path.getsize(screenshot)} bytes)")
    nodes = data["graph"]["nodes"]
    check_graph_views(driver, data["graph"])
    target = None
    for element in driver.find_elements(By.CSS_SELECTOR, "#graph-view g.node"):
        node_id = element.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        if nodes.get(node_id, {}).get("kind") == "op" and nodes[node_id]["module"]:
            target = (element, nodes[node_id])
            break
    check(target is not None, "the graph has a drawn op node inside a module")
    if target:
        element, node = target
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        shape = element.find_element(By.CSS_SELECTOR, "polygon, ellipse, path")
        ActionChains(driver).move_to_element(shape).click().perform()
        op = driver.find_element(By.CSS_SELECTOR, "#node-detail dd[data-field='op']").text
        module = driver.find_element(By.CSS_SELECTOR, "#node-detail dd[data-field='module']").text
        check(op == node["op"] and module == node["module"], f"clicked graph node: the panel says op {op!r}, module {module!r}")

    check_axes_and_legends(driver)
    results = [(r.find_element(By.CSS_SELECTOR, "td.result-name").text, r.find_element(By.CSS_SELECTOR, "td.result-text").text)
               for r in driver.find_elements(By.CSS_SELECTOR, "#results-table tr.result")]
    want = [(r["name"], r["text"]) for r in data.get("results", [])]
    if epochs:  # our own winter_games run: its translation, both ways
        check([n for n, _ in results] == ["source", "teacher-forced", "greedy"] and results == want
              and results[0][1] == "I like the 2022 Beijing Winter Games",
              f"the run's outcome on the page: {results}")



def check_graph_views(driver, graph):
    """The graph opens collapsed by module, readable at that size; zooms; expands to every node."""
    view = driver.find_element(By.ID, "graph-view")
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", view)
    boxes = graph["collapsed"]["boxes"]
    drawn = driver.find_elements(By.CSS_SELECTOR, "#graph-view g.node")
    heights = driver.execute_script("""return [...document.querySelectorAll('#graph-view g.node text')]
                                       .map(t => t.getBoundingClientRect().height)""")
    check(view.get_attribute("data-view") == "modules" and len(drawn) == len(boxes) < len(graph["nodes"])
          and heights and min(heights) >= 10,
          f"the graph opens collapsed by module: {len(drawn)} boxes for {len(graph['nodes'])} nodes, "
          f"labels {min(heights) if heights else 0:.0f} px high or more as it opens")
    before = float(view.get_attribute("data-zoom"))
    driver.find_element(By.ID, "graph-zoom-in").click()
    after = float(view.get_attribute("data-zoom"))
    width = driver.execute_script("return document.querySelector('#graph-view svg').getBoundingClientRect().width")
    natural = driver.execute_script("return document.querySelector('#graph-view svg').width.baseVal.value")
    check(abs(after - before * 1.25) < 1e-6 and abs(width - natural * after) < 2,
          f"zoom in: {before:.2f} -> {after:.2f}, the picture {width:.0f} px wide")
    box = drawn[0] if drawn else None
    if box:
        ActionChains(driver).move_to_element(box.find_element(By.CSS_SELECTOR, "polygon, path")).click().perform()
        module = driver.find_element(By.CSS_SELECTOR, "#node-detail dd[data-field='module']").text
        check(module == boxes[0]["module"], f"clicking a module box names it: {module!r}")
    driver.find_element(By.ID, "graph-which").click()
    every = driver.find_elements(By.CSS_SELECTOR, "#graph-view g.node")
    check(view.get_attribute("data-view") == "nodes" and len(every) == len(graph["nodes"]),
          f"'show every node' draws all {len(every)} nodes")


def is_round_step(d):
    """1, 2 or 5 times a power of ten."""
    if d <= 0:
        return False
    mantissa = d / 10 ** math.floor(math.log10(d) + 1e-9)
    return any(abs(mantissa - m) < 1e-6 for m in (1, 2, 5, 10))


def round_ticks(values):
    """Evenly spaced at a 1-2-5 step, each a whole multiple of it; or (a log axis) whole decades."""
    if len(values) < 2:
        return False
    steps = [b - a for a, b in zip(values, values[1:])]
    d = steps[0]
    if is_round_step(d) and all(abs(x - d) <= 1e-6 * d for x in steps):
        return all(abs(v / d - round(v / d)) < 1e-6 for v in values)
    exponents = [math.log10(v) if v > 0 else float("nan") for v in values]
    return all(abs(e - round(e)) < 1e-9 for e in exponents)


def check_axes_and_legends(driver):
    """Every chart as the browser drew it: tick labels on round numbers, legends clear of the curves."""
    charts = driver.execute_script("""
      return [...document.querySelectorAll('svg.chart')].map(svg => {
        const box = svg.querySelector('g.legend') && svg.querySelector('g.legend').getBBox();
        const points = [...svg.querySelectorAll('polyline.series')].flatMap(p =>
          [...p.points].map(q => [q.x, q.y]));
        return {y: [...svg.querySelectorAll('text.ytick')].map(t => t.textContent),
                x: [...svg.querySelectorAll('text.xtick')].map(t => t.textContent),
                legend: box && [box.x, box.y, box.width, box.height], points,
                name: svg.id || svg.closest('div').parentElement.id};
      });""")
    bad_ticks = [(c["name"], c["y"], c["x"]) for c in charts
                 if c["points"] and not (round_ticks([float(v) for v in c["y"]]) and round_ticks([float(v) for v in c["x"]]))]
    check(charts and not bad_ticks, f"{len(charts)} charts: axis ticks on round numbers (1-2-5 steps), e.g. "
                                    f"{charts[0]['y'] if charts else None}" + (f"; not: {bad_ticks[:3]}" if bad_ticks else ""))
    legends = [c for c in charts if c["legend"]]
    covered = []
    for c in legends:
        x, y, w, h = c["legend"]
        inside = [p for p in c["points"] if x <= p[0] <= x + w and y <= p[1] <= y + h]
        if inside:
            covered.append((c["name"], len(inside)))
    check(legends and not covered, f"{len(legends)} legends, none over a point of its chart's curves"
                                   + (f"; covering: {covered}" if covered else ""))


def check_long_run(driver, build, scratch):
    path = os.path.join(scratch, "long.html")
    subprocess.run([os.path.join(build, "tests", "long_report"), path], check=True, stdout=subprocess.DEVNULL)
    _, seconds = load(driver, path)
    timing = driver.execute_script("const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd")
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    data = page_data(driver)
    line = driver.find_element(By.CSS_SELECTOR, "#loss-svg polyline.series[data-name='loss']")
    points = int(line.get_attribute("data-points"))
    steps = len(data["scalars"]["loss"]["step"])
    check(steps == 10000 and 0 < points <= 2000 and line.get_attribute("data-bucketed") == "true",
          f"10,000-step report: {steps} steps drawn as {points} min/max points")
    check(not errors, "10,000-step report: no console error")
    title = driver.find_element(By.ID, "title").text
    labels = [t.get_attribute("textContent") for t in driver.find_elements(By.CSS_SELECTOR, "#attn-svg text")]
    injected = driver.find_elements(By.CSS_SELECTOR, "main b, header b")
    check(title.endswith("</script><!--") and "</script>" in labels and "<b>bold</b>" in labels and not injected,
          "labels with markup (</script>, <!--, <b>) are shown as text, no element made from them")
    size = os.path.getsize(path) / 1e6
    check(seconds < LOAD_LIMIT_S, f"10,000-step report ({size:.1f} MB) loads in {seconds:.2f} s "
                                  f"(load event at {timing / 1000:.2f} s; limit {LOAD_LIMIT_S} s)")


def check_live(driver, build, scratch):
    path = os.path.join(scratch, "live.html")
    write = lambda steps, *live: subprocess.run([os.path.join(build, "tests", "long_report"), path, "--steps", str(steps), *live],
                                                check=True, stdout=subprocess.DEVNULL)
    write(5, "--live")
    load(driver, path)
    status = driver.find_element(By.ID, "status").text if driver.find_elements(By.ID, "status") else ""
    check("live" in status, f"a live report says so: {status!r}")
    Select(driver.find_element(By.ID, "attn-head")).select_by_index(3)
    chosen = driver.find_element(By.ID, "attn-svg").get_attribute("data-map")

    def steps_shown(want, limit=15.0):
        start = time.time()
        while time.time() - start < limit:
            try:
                if len(page_data(driver)["scalars"]["loss"]["step"]) == want:
                    return time.time() - start
            except Exception:  # between two documents while it reloads
                pass
            time.sleep(0.25)
        return None

    write(8, "--live")
    seconds = steps_shown(8)
    check(seconds is not None, "the live page reloaded itself and shows the 8 steps written since"
                               + (f" (after {seconds:.1f} s)" if seconds is not None else " (not within 15 s)"))
    kept = driver.find_element(By.ID, "attn-svg").get_attribute("data-map")
    check(kept == chosen, f"the attention selection survives the reload: {chosen} -> {kept}")
    write(10)
    seconds = steps_shown(10)
    refresh = driver.find_elements(By.ID, "xtgrad-live-reload")
    status = driver.find_element(By.ID, "status").text if driver.find_elements(By.ID, "status") else ""
    check(seconds is not None and not refresh and "live" not in status,
          f"finished: the page shows all 10 steps, no longer reloads, and says {status!r}")
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    check(not errors, "live report: no console error" + ("" if not errors else f": {errors[:3]}"))


def check_diverged(driver, build, scratch):
    path = os.path.join(scratch, "diverged.html")
    subprocess.run([os.path.join(build, "tests", "long_report"), path, "--steps", "20", "--diverge", "5"],
                   check=True, stdout=subprocess.DEVNULL)
    load(driver, path)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    check(not errors, "diverged report: no console error" + ("" if not errors else f": {errors[:3]}"))
    status = driver.find_element(By.ID, "status").text
    check("stopped by an error at step 6: loss is nan at step 6" in status and "finished" not in status,
          f"a run stopped by a NaN says so: {status!r}")
    marks = [t.text for t in driver.find_elements(By.CSS_SELECTOR, "#loss-svg text.nonfinite")]
    lines = driver.find_elements(By.CSS_SELECTOR, "#loss-svg line.nonfinite-step")
    points = int(driver.find_element(By.CSS_SELECTOR, "#loss-svg polyline.series[data-name='loss']").get_attribute("data-points"))
    check(marks == ["loss: nan at step 6"] and len(lines) == 1 and points == 5,
          f"the loss chart draws the 5 finite losses and names the NaN: {marks}, {len(lines)} step line(s), {points} points")
    cells = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "#module-table td.num")]
    check("nan" in cells, f"the module table shows the NaN statistics as nan: {cells.count('nan')} cells")
    title = driver.find_element(By.ID, "title").text
    notes = driver.find_element(By.ID, "notes").text
    check(title == "diverged r\ufffdsum\ufffd" and "not valid UTF-8" in notes and "the title" in notes,
          f"a title that is not UTF-8 is shown with U+FFFD and noted: {title!r}, {notes!r}")


def check_comparison(driver, build, scratch, report):
    path = os.path.join(scratch, "compare.html")
    subprocess.run([os.path.join(build, "tools", "report_compare"), report, os.path.join(scratch, "long.html"),
                    "-o", path, "--names", "short,long"], check=True, stdout=subprocess.DEVNULL)
    load(driver, path)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    names = [p.get_attribute("data-name") for p in driver.find_elements(By.CSS_SELECTOR, "#loss-svg polyline.series")]
    check(not errors and "short: loss" in names and "long: loss" in names,
          f"report_compare: one page, the runs' curves overlaid ({', '.join(names)})" + (f"; errors {errors[:3]}" if errors else ""))


def run_winter_games(build, out):
    """A small winter_games run in two parts, 6 epochs then --resume to 12: the page must keep the
    first part's steps. Its output must say where the page is and how big the run file is."""
    command = [os.path.join(build, "examples", "winter_games"), "--d-model", "32", "--d-ff", "64", "--d-k", "8",
               "--d-v", "8", "--layers", "2", "--heads", "2", "--lr", "1e-3", "--out", out, "--quiet"]
    subprocess.run(command + ["--epochs", str(EPOCHS // 2)], check=True, stdout=subprocess.DEVNULL)
    checkpoint = os.path.join(out, "winter_games.safetensors")
    printed = subprocess.run(command + ["--epochs", str(EPOCHS), "--resume", checkpoint], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
    report = os.path.join(out, "report.html")
    size = re.search(r"^saved " + re.escape(checkpoint) + r" \(([0-9.]+) (bytes|kB|MB|GB): ", printed, re.M)
    scale = {"bytes": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}
    said = float(size.group(1)) * scale[size.group(2)] if size else -1
    check(f"report: {report} (open it in a browser)" in printed and abs(said - os.path.getsize(checkpoint)) <= 0.05 * said,
          f"winter_games says where its page is and how big its run file is ({os.path.getsize(checkpoint)} bytes): "
          f"{[line for line in printed.splitlines() if line.startswith(('report:', 'saved'))]}")
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--report", help="check this report page instead of a fresh winter_games run")
    parser.add_argument("--screenshot", help="save a screenshot of the page here (PNG)")
    parser.add_argument("--keep", help="write the scratch files here and keep them")
    args = parser.parse_args()
    scratch = args.keep or tempfile.mkdtemp(prefix="xtgrad_report_")
    os.makedirs(scratch, exist_ok=True)
    try:
        report = args.report
        if not report:
            out = os.path.join(scratch, "winter_games")
            report = run_winter_games(args.build, out)
        driver = browser(os.path.join(scratch, "profile"))
        try:
            print(f"report browser test ({driver.capabilities.get('browserVersion', '?')}): {report}")
            check_short_run(driver, report, args.screenshot, None if args.report else EPOCHS)
            check_live(driver, args.build, scratch)
            check_diverged(driver, args.build, scratch)
            check_long_run(driver, args.build, scratch)
            check_comparison(driver, args.build, scratch, report)
        finally:
            driver.quit()
    except Exception as e:  # a crash is a failure with its reason, not a traceback without the summary
        failures.append(repr(e))
        print(f"  FAIL {e!r}")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print("report browser test: " + ("PASS" if not failures else f"FAIL ({len(failures)} checks)"))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
