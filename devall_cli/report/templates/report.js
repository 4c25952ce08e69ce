(function () {
  "use strict";
  var nodes = function () { return document.querySelectorAll("details.node"); };
  document.querySelectorAll("button[data-open]").forEach(function (button) {
    button.addEventListener("click", function () {
      var open = button.getAttribute("data-open") === "all";
      nodes().forEach(function (node) { node.open = open; });
    });
  });
  document.querySelectorAll("button[data-show]").forEach(function (button) {
    button.addEventListener("click", function () {
      document.querySelectorAll("button[data-show]").forEach(function (other) {
        var view = document.getElementById(other.getAttribute("data-show"));
        var on = other === button;
        other.classList.toggle("on", on);
        if (view) { view.hidden = !on; }
      });
    });
  });
  // A link to a node (from the graph, the timeline or the failure list) opens its section.
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) { return; }
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") { el.open = true; }
    }
    target.scrollIntoView({block: "start"});
  }
  window.addEventListener("hashchange", reveal);
  reveal();
  document.documentElement.setAttribute("data-ready", "1");
})();
