"""charts.py: data in, plotly figure dict out, without a browser."""
from __future__ import annotations

from webapp.dashboard import charts


def point(number, fitness, node="alpha", finished=100.0, duration=2.0, slot=None, status=None):
    return {"number": number, "fitness": fitness, "node": node, "device": "cpu", "finished": finished,
            "started": finished - duration, "duration": duration, "slot": slot or f"{node}/cpu/0",
            "status": status or ("done" if fitness is not None else "failed"), "description": f"arch {number}",
            "dispatched": finished - duration - 1}


POINTS = [point(0, 0.5, "alpha", 10), point(1, 0.7, "beta", 12), point(2, None, "alpha", 14),
          point(3, 0.6, "alpha", 16), point(4, 0.9, "beta", 18), point(5, None, status="running", node="beta")]


def traces(figure):
    return {trace["name"]: trace for trace in figure["data"]}


def test_fitness_scatter_has_a_webgl_trace_per_node_and_failures_apart():
    figure = charts.fitness_scatter(POINTS)
    by_name = traces(figure)
    assert set(by_name) == {"alpha/cpu", "beta/cpu", "failed"}
    assert all(t["type"] == "scattergl" for t in figure["data"])
    assert by_name["alpha/cpu"]["y"] == [0.5, 0.6] and by_name["alpha/cpu"]["customdata"] == [0, 3]
    assert by_name["alpha/cpu"]["x"] == [10_000.0, 16_000.0]  # epoch ms on a date axis
    assert by_name["failed"]["y"] == [0.0] and by_name["failed"]["text"] == ["#2 arch 2"]
    assert figure["layout"]["xaxis"]["type"] == "date"


def test_best_so_far_never_goes_down_and_reaches_the_last_result():
    trace = charts.best_so_far(POINTS)["data"][0]
    assert trace["name"] == charts.BEST and trace["y"] == [0.5, 0.7, 0.7, 0.9]
    assert trace["x"][-1] == 18_000.0 and trace["line"]["shape"] == "hv"


def test_node_bars_from_the_summary():
    summary = {"nodes": [{"node": "a", "device": "cpu", "count": 3, "throughput_per_hour": 1080.04},
                         {"node": "b", "device": "cuda:0", "count": 5, "throughput_per_hour": 1800}]}
    count, rate = charts.node_bars(summary)["data"]
    assert count["x"] == ["a/cpu", "b/cuda:0"] and count["y"] == [3, 5]
    assert rate["y"] == [1080.0, 1800] and rate["yaxis"] == "y2"


def test_throughput_over_time_per_node():
    by_name = traces(charts.throughput_over_time(POINTS, start=0.0))
    assert by_name["beta/cpu"]["y"] == [3600 * 1 / 12, 3600 * 2 / 18]


def test_speedup_against_ideal():
    history = [{"time": 1.0, "speedup": 0.9, "ideal": 1, "held": 1.0, "efficiency": 0.9},
               {"time": 2.0, "speedup": 1.8, "ideal": 2, "held": 2.0, "efficiency": 0.9}]
    by_name = traces(charts.speedup(history))
    assert by_name["speedup"]["y"] == [0.9, 1.8] and by_name["ideal"]["y"] == [1.0, 2.0]
    assert by_name["efficiency"]["yaxis"] == "y2"


def test_gantt_has_a_segment_per_evaluation_on_its_slot():
    by_name = traces(charts.gantt(POINTS))
    alpha = by_name["alpha/cpu"]
    assert alpha["x"][:3] == [8_000.0, 10_000.0, None] and alpha["y"][:3] == ["alpha/cpu/0", "alpha/cpu/0", None]
    assert len(alpha["x"]) == 9  # three evaluations on alpha (one failed)
    assert by_name[charts.RUNNING]["x"] == [], "no evaluation under way was given"


def test_gantt_draws_evaluations_under_way_up_to_now():
    running = [{**point(5, None, node="beta"), "started": 20.0, "finished": None, "status": "running"},
               {**point(6, None, node="beta"), "started": None, "finished": None, "status": "running"}]  # not started
    trace = traces(charts.gantt(POINTS, running, now=23.5))[charts.RUNNING]
    assert trace["x"] == [20_000.0, 23_500.0, None] and trace["y"] == ["beta/cpu/0", "beta/cpu/0", None]
    assert trace["text"][0] == "#5 arch 5 (running)"


def test_pareto_front_for_two_objectives():
    points = [{"number": i, "description": "", "accuracy": a, "params": p}
              for i, (a, p) in enumerate([(0.9, 1000), (0.8, 100), (0.7, 500), (0.95, 5000)])]
    objectives = [["accuracy", "max"], ["params", "min"]]
    front = charts.pareto_front(points, objectives)
    assert sorted(p["number"] for p in front) == [0, 1, 3]
    figure = charts.pareto(points, objectives)
    assert traces(figure)["Pareto front"]["x"] == [0.8, 0.9, 0.95]
    assert charts.pareto(points, [["accuracy", "max"]]) is None


def test_learning_curve_series():
    curve = [{"epoch": 1, "train_loss": 1.0, "val_accuracy": 0.5}, {"epoch": 2, "train_loss": 0.5, "val_accuracy": 0.8}]
    by_name = traces(charts.learning_curve(curve))
    assert by_name["train_loss"]["y"] == [1.0, 0.5] and by_name["val_accuracy"]["yaxis"] == "y2"


def test_ten_thousand_points_all_plotted():
    # Its time is measured by benchmarks/dashboard.py (the snapshot row), not asserted here.
    many = [point(i, 0.5 + (i % 100) / 1000, f"n{i % 8}", 10 + i * 0.1) for i in range(10_000)]
    figures = charts.search_figures(many, {"nodes": []}, [], 0.0, [], [])
    assert sum(len(t["x"]) for t in figures["fitness"]["data"]) == 10_000
    assert sum(len(t["x"]) for t in figures["gantt"]["data"]) == 3 * 10_000  # start, end, gap per bar


def test_a_trace_is_still_checked_by_plotly_apart_from_its_arrays():
    import plotly.graph_objects as go
    import pytest

    trace = charts._trace(go.Scattergl, name="a", mode="markers", x=[1.0, None], y=[2, 3], marker={"size": 7})
    assert trace == {"type": "scattergl", "name": "a", "mode": "markers", "marker": {"size": 7},
                     "x": [1.0, None], "y": [2, 3]}
    with pytest.raises(ValueError, match="markr"):
        charts._trace(go.Scattergl, name="a", markr={"size": 7}, x=[1.0])


def test_an_empty_chart_hides_its_axes_behind_a_note():
    # Before the first result an empty date axis would span the year 2000.
    figures = charts.search_figures([], {"nodes": []}, [], None, [], [])
    for name, figure in figures.items():
        layout = figure["layout"]
        assert layout["meta"]["empty"], name
        for axis in layout["meta"]["empty"]:
            assert layout[axis]["visible"] is False, (name, axis)
        expected = charts.SPEEDUP_WAITS if name == "speedup" else charts.NO_RESULTS
        assert [note["text"] for note in layout["annotations"]] == [expected], name
    assert figures["speedup"]["layout"]["meta"]["empty"] == ["xaxis", "yaxis", "yaxis2"]


def test_a_chart_with_points_shows_its_axes():
    figures = charts.search_figures(POINTS, {"nodes": [{"node": "a", "device": "cpu", "count": 1,
                                                        "throughput_per_hour": 1.0}]},
                                    [{"time": 1.0, "speedup": 0.5, "ideal": 1, "held": 1.0,
                                      "efficiency": 0.5}], 0.0, [], [])
    for name, figure in figures.items():
        layout = figure["layout"]
        assert "meta" not in layout and "annotations" not in layout, name
        assert layout.get("xaxis", {}).get("visible", True) is True, name
    # Evaluations under way (no result yet) are points on the timeline too.
    running = [{**point(5, None, node="beta"), "started": 20.0, "finished": None, "status": "running"}]
    assert "meta" not in charts.gantt([], running, now=23.0)["layout"]


def test_efficiency_has_its_own_labelled_percent_scale_from_zero_to_one():
    history = [{"time": 1.0, "speedup": 0.78, "ideal": 2, "held": 2.0, "efficiency": 0.39}]
    figure = charts.speedup(history)
    axis = figure["layout"]["yaxis2"]
    # The right axis always spans 0-100%: 39% sits low, not level with the ideal line at the top.
    assert axis["range"] == [0, charts.EFFICIENCY_RANGE[1]] and axis["autorange"] is False
    assert axis["tickformat"] == ".0%" and axis["dtick"] == 0.25
    assert "efficiency" in axis["title"]["text"] and "speedup" in figure["layout"]["yaxis"]["title"]["text"]
    efficiency = traces(figure)["efficiency"]
    assert efficiency["y"] == [0.39] and efficiency["yaxis"] == "y2" and efficiency["line"]["dash"] == "dot"


def test_one_result_has_a_readable_window_an_accuracy_axis_and_visible_points():
    """Issue 36, item 3: one result alone is a minute of time axis (not 1.5 ms), its accuracy axis stays in
    [0, 1], and "Best so far" and the throughput draw it as a marker (a line of one point draws nothing)."""
    one = [point(0, 0.93, "alpha", 1_000.0)]
    figures = charts.search_figures(one, {"nodes": []}, [], 990.0, [], [])
    for name in ("fitness", "best", "throughput"):
        layout = figures[name]["layout"]
        low, high = layout["xaxis"]["autorangeoptions"]["include"]
        assert high - low >= 2 * charts.TIME_PAD_MS and low < 1_000_000.0 < high, name
        assert all("markers" in trace["mode"] for trace in figures[name]["data"]), name
    for name in ("fitness", "best"):
        clip = figures[name]["layout"]["yaxis"]["autorangeoptions"]
        assert (clip["clipmin"], clip["clipmax"]) == charts.UNIT_CLIP, name


def test_a_fitness_outside_zero_to_one_is_not_clipped_away():
    figure = charts.fitness_scatter([point(0, 1.7, "alpha", 10.0)])
    assert "autorangeoptions" not in figure["layout"]["yaxis"]


def test_best_so_far_of_only_failures_says_it_waits_for_a_success():
    figure = charts.best_so_far([point(0, None, "alpha", 10.0)])
    assert figure["layout"]["annotations"][0]["text"] == charts.NO_SUCCESS


def test_the_chart_and_the_summary_line_read_the_same_ideal():
    """Issue 36, item 2: the dashed ideal is ``held``, the same number as the line's "of N"."""
    history = [{"time": 1.0, "speedup": 0.53, "ideal": 1, "held": 0.55, "efficiency": 0.53 / 0.55},
               {"time": 2.0, "speedup": None, "ideal": 1, "held": None, "efficiency": None}]
    by_name = traces(charts.speedup(history))
    assert by_name["ideal"]["y"] == [0.55] and by_name["speedup"]["y"] == [0.53]
