// A quota's gauge (percent of the limit) and its used-over-time line against the limit, with the forecast.
(function () {
  const source = document.getElementById("quota-data");
  if (!source) return;
  const data = JSON.parse(source.textContent);
  const steps = [{range: [0, data.thresholds[0] || 80], color: "#e8f0fb"}];
  Plotly.newPlot("quota-gauge", [{
    type: "indicator", mode: "gauge+number", value: data.percent,
    number: {suffix: " %", valueformat: ".1f"},
    gauge: {axis: {range: [0, Math.max(100, data.percent * 1.1)]}, bar: {color: data.percent >= 100 ? "#c0392b" : "#2563a8"},
            steps: steps, threshold: {line: {color: "#c0392b", width: 3}, value: 100}},
  }], {margin: {t: 20, b: 10}}, {responsive: true, displaylogo: false});
  const traces = [
    {type: "scatter", mode: "lines+markers", name: "used", x: data.days, y: data.cumulative,
     hovertemplate: "%{x}<br>%{y:,.1f} " + data.unit + "<extra></extra>"},
    {type: "scatter", mode: "lines", name: "limit", x: data.window, y: [data.limit, data.limit], line: {color: "#c0392b", dash: "dash"}},
    {type: "scatter", mode: "lines", name: "forecast", x: data.forecast.x, y: data.forecast.y, line: {color: "#d89614", dash: "dot"}},
  ];
  Plotly.newPlot("quota-chart", traces, {
    margin: {t: 20}, legend: {orientation: "h"}, xaxis: {type: "date", range: data.window},
    yaxis: {title: {text: data.unit}, rangemode: "tozero"},
  }, {responsive: true, displaylogo: false});
})();
