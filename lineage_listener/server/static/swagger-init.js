// Swagger UI for /docs, started from a file: the page's Content-Security-Policy allows no inline script.
window.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapi, dom_id: "#swagger-ui", layout: "BaseLayout", deepLinking: true,
    showExtensions: true, showCommonExtensions: true,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
});
