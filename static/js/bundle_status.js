// Keeps a bundle's status and counts live while it is queued or running (polls the API).
(function () {
  const box = document.getElementById("bundle-status");
  if (!box) return;
  const active = (s) => s === "queued" || s === "running";
  async function poll() {
    const response = await fetch(box.dataset.url, {headers: {Accept: "application/json"}});
    if (!response.ok) return;
    const bundle = await response.json();
    box.querySelectorAll("[data-field]").forEach((el) => {
      const value = bundle[el.dataset.field];
      if (el.tagName === "PROGRESS") el.value = value; else el.textContent = value === "" ? "-" : value;
    });
    box.querySelector("[data-field=status]").className = "status " + bundle.status;
    if (active(bundle.status)) setTimeout(poll, 1500); else if (box.dataset.status !== bundle.status) location.reload();
  }
  if (active(box.dataset.status)) setTimeout(poll, 1000);
})();
