// Swagger UI on /docs: the contract from /openapi.yaml; "Try it out" calls this origin.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  var declared = null;
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-spec"),
    domNode: root,
    deepLinking: true,
    // The key entered under "Authorize" stays in this page's memory, never in storage.
    persistAuthorization: false,
    tryItOutEnabled: false,
    onComplete: function () {
      var spec = window.ui.specSelectors.specJson().toJS();
      declared = spec.servers && spec.servers.length ? spec.servers[0].url.replace(/\/$/, "") : null;
    },
    // openapi.yaml names the development address; send the calls to wherever this page
    // was served from instead, so the docs work behind any host name or port.
    requestInterceptor: function (request) {
      if (declared && request.url.indexOf(declared + "/") === 0) {
        request.url = window.location.origin + request.url.slice(declared.length);
      }
      return request;
    }
  });
})();
