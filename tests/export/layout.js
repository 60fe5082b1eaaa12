// Injected by html_check.py into a copy of a page (the page itself has no
// script): measures the layout the browser made and writes it, as JSON,
// into <pre id="layout-result"> for --dump-dom to carry out.
//   overflow: how far the page is wider than the window (px)
//   wide: charts (svg ids) that reach past the window's right edge
//   collisions: pairs of chart labels whose boxes overlap, per chart
//   clipped: labels that reach out of their chart (cut off there)
(function () {
  var tol = 0.5, out = { width: window.innerWidth, collisions: [], clipped: [], wide: [], texts: 0 };
  out.overflow = document.documentElement.scrollWidth - window.innerWidth;
  var svgs = document.querySelectorAll("svg");
  for (var s = 0; s < svgs.length; s++) {
    var sr = svgs[s].getBoundingClientRect();
    if (sr.right > window.innerWidth + tol) out.wide.push(svgs[s].id + " " + sr.right);
    var boxes = [], texts = svgs[s].querySelectorAll("text");
    for (var i = 0; i < texts.length; i++) {
      var b = texts[i].getBoundingClientRect();
      if (b.width > 0 && b.height > 0) boxes.push([b, texts[i].textContent]);
      if (b.width > 0 && (b.left < sr.left - 1 || b.right > sr.right + 1 || b.top < sr.top - 1 ||
                          b.bottom > sr.bottom + 1))
        out.clipped.push(svgs[s].id + ": '" + texts[i].textContent + "'");
    }
    out.texts += boxes.length;
    for (var i = 0; i < boxes.length; i++)
      for (var j = i + 1; j < boxes.length; j++) {
        var a = boxes[i][0], b = boxes[j][0];
        var w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        var h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        // a box is the glyphs' line, leading included (13 px at 11 px)
        if (w > tol && h > tol)
          out.collisions.push(svgs[s].id + ": '" + boxes[i][1] + "' and '" + boxes[j][1] + "'");
      }
  }
  var pre = document.createElement("pre");
  pre.id = "layout-result";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
