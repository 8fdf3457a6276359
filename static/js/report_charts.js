// Draws every report chart on the page (elements with data-chart naming their JSON script) with Plotly,
// and drills down when a bar, slice or legend entry is clicked (each series carries its drill URL).
(function () {
  function go(series) {
    if (series && series.drill) window.location.assign(series.drill);
  }

  function draw(el, data) {
    if (!data.series.length) { el.textContent = "No usage in this range."; return; }
    const unit = data.unit;
    const ratio = unit === "%";
    const value = ratio ? "%{y:.1f} %" : "%{y:,.1f} " + unit;
    const axisTitle = data.label + " (" + unit + ")";
    let traces;
    let layout = {margin: {t: 20, r: 10}, legend: {orientation: "h"}, yaxis: {title: {text: axisTitle}}};
    if (data.chart === "pie") {
      traces = [{
        type: "pie", sort: false, labels: data.series.map((s) => s.name), values: data.series.map((s) => s.total),
        hovertemplate: "%{label}: %{value:,.1f} " + unit + " (%{percent})<extra></extra>",
      }];
      layout = {margin: {t: 20, r: 10}, legend: {orientation: "v"}};
    } else if (data.period === "total") {
      traces = data.series.map((s) => ({
        type: "bar", name: s.name, x: [s.name], y: [s.total], hovertemplate: s.name + ": " + value + "<extra></extra>",
      }));
      layout.barmode = "stack";
      layout.xaxis = {type: "category", showticklabels: false};
    } else {
      traces = data.series.map((s) => {
        const trace = {name: s.name, x: data.periods, y: s.values, hovertemplate: "%{x}<br>" + s.name + ": " + value + "<extra></extra>"};
        if (data.chart === "bar") {
          trace.type = "bar";
        } else {
          trace.type = "scatter";
          trace.mode = "lines+markers";
          if (data.chart === "area" && !ratio) trace.stackgroup = "one";
        }
        return trace;
      });
      layout.barmode = ratio ? "group" : "stack";
      layout.xaxis = {type: "category", title: {text: data.period}};
    }
    Plotly.newPlot(el, traces, layout, {responsive: true, displaylogo: false}).then(() => {
      el.dataset.drawn = "1";
      el.on("plotly_click", (event) => {
        const point = event.points[0];
        go(data.series[data.chart === "pie" ? point.pointNumber : point.curveNumber]);
      });
      el.on("plotly_legendclick", (event) => {
        if (data.chart === "pie") go(data.series.find((s) => s.name === event.label));
        else go(data.series[event.curveNumber]);
        return false;
      });
    });
  }

  document.querySelectorAll("[data-chart]").forEach((el) => {
    draw(el, JSON.parse(document.getElementById(el.dataset.chart).textContent));
  });
})();
