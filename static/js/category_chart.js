// Stacked bars of pilot core-hours per category and period, from the JSON the page embeds.
(function () {
  const data = JSON.parse(document.getElementById("category-data").textContent);
  const el = document.getElementById("category-chart");
  if (!data.periods.length) { el.textContent = "No pilot time in this range."; return; }
  const colours = ["#8c564b", "#e377c2", "#ff7f0e", "#2ca02c", "#d62728", "#7f7f7f", "#9467bd", "#17becf"];
  const traces = data.series.map((s, i) => ({
    type: "bar", name: s.name, x: data.periods, y: s.values, marker: {color: colours[i]},
    hovertemplate: "%{x}<br>" + s.name + ": %{y:,.1f} core-hours<extra></extra>",
  }));
  Plotly.newPlot(el, traces, {barmode: "stack", margin: {t: 20}, legend: {orientation: "h"},
    yaxis: {title: {text: "core-hours"}}}, {responsive: true, displaylogo: false});
})();
