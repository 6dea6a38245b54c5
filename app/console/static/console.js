// Show every <time datetime> in the viewer's own zone, to the second; the ISO text the
// service stored stays in the title. Without this script the page shows UTC.
(function () {
  "use strict";
  var pad = function (n) { return String(n).padStart(2, "0"); };
  var zoneName = function (moment) {
    var parts = new Intl.DateTimeFormat("en-US", { timeZoneName: "short" }).formatToParts(moment);
    for (var i = 0; i < parts.length; i += 1) {
      if (parts[i].type === "timeZoneName") { return parts[i].value; }
    }
    return "";
  };
  document.querySelectorAll("time[datetime]").forEach(function (node) {
    var moment = new Date(node.getAttribute("datetime"));
    if (isNaN(moment.getTime())) { return; }
    node.textContent = moment.getFullYear() + "-" + pad(moment.getMonth() + 1) + "-" +
      pad(moment.getDate()) + " " + pad(moment.getHours()) + ":" + pad(moment.getMinutes()) +
      ":" + pad(moment.getSeconds()) + " " + zoneName(moment);
    node.setAttribute("data-local", "true");
  });
}());
