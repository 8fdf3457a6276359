// Draws the stacked bar chart of core-hours per day and site from the JSON the page embeds.
(function () {
  const data = JSON.parse(document.getElementById("usage-data").textContent);
  const el = document.getElementById("usage-chart");
  if (!data.days.length) { el.textContent = "No usage in this range."; return; }
  const traces = data.series.map((s) => ({
    type: "bar", name: s.name, x: data.days, y: s.values,
    hovertemplate: "%{x}<br>" + s.name + ": %{y:,.1f} core-hours<extra></extra>",
  }));
  Plotly.newPlot(el, traces, {
    barmode: "stack", margin: {t: 20}, legend: {orientation: "h"},
    yaxis: {title: {text: "core-hours"}}, xaxis: {type: "date"},
  }, {responsive: true, displaylogo: false});
})();
