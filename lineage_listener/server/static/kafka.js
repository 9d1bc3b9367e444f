// The Kafka consumer's health in the header, from GET /api/health: state, lag, rate; hidden without Kafka.
(function () {
  "use strict";
  const COLOURS = {active: "#2e8b57", standby: "#8a6d00", starting: "#8a6d00", failed: "#c0392b", stopped: "#777"};
  const box = document.createElement("a");
  box.id = "kafka-health";
  box.href = "/api/health";
  box.hidden = true;
  Object.assign(box.style, {marginLeft: "auto", padding: ".15em .6em", borderRadius: "3px", fontSize: "90%"});
  document.querySelector("header").appendChild(box);

  function describe(k) {
    const lagged = k.partitions.map((p) => `partition ${p.partition}: offset ${p.last_offset ?? "-"}, committed ` +
      `${p.committed ?? "-"}, lag ${p.lag ?? "?"}`);
    return [`topic ${k.topic} on ${k.bootstrap}, group ${k.group}`, ...lagged,
      `${k.events} events, ${k.edges} edge rows written since start; ${k.dead_letters} dead letters ` +
      `(${k.dead_letter})`, k.error || ""].filter(Boolean).join("\n");
  }

  async function refresh() {
    try {
      const answer = await fetch("/api/health");
      const k = (await answer.json()).kafka;
      if (!k) {
        box.hidden = true;
        return;
      }
      box.textContent = `kafka: ${k.state}, lag ${k.lag}, ${k.events_per_s} events/s`;
      box.title = describe(k);
      box.style.background = COLOURS[k.state] || "#777";
      box.hidden = false;
    } catch (err) {
      box.hidden = true;  // the server is away: the page says so elsewhere
    }
  }
  refresh();
  setInterval(refresh, 5000);
})();
