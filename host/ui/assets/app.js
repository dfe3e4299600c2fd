// The status page's live part: the server renders the page, then pushes the re-rendered
// content over server-sent events (/events) whenever it changes; this swaps it in. The
// markup comes from the server's html/template, which escaped every value.
(function () {
  "use strict";
  var content = document.getElementById("content");
  var live = document.getElementById("live");
  function show(state, text) {
    live.dataset.state = state;
    live.className = "live " + (state === "live" ? "on" : "off");
    live.textContent = text;
  }
  if (!window.EventSource) {
    show("static", "static page (no EventSource: reload to update)");
    return;
  }
  var es = new EventSource("/events");
  es.addEventListener("status", function (ev) {
    content.innerHTML = ev.data;
    show("live", "live · updated " + new Date().toLocaleTimeString());
  });
  es.addEventListener("open", function () {
    show("live", "live");
  });
  es.addEventListener("error", function () {
    // EventSource reconnects by itself (the server asks for a retry after 1 s).
    show("reconnecting", "reconnecting…");
  });
})();
