/**
 * `h(tag, attrs, children)`, the one DOM builder of every dashboard page's
 * script (inlined by page-script.ts): text goes in
 * through `textContent` and text nodes only, so nothing a server or a
 * client sends ever becomes markup. A string of ES2020, inlined into those
 * scripts; no template literals inside.
 */
export const DOM_BUILDER_JS = String.raw`
  function h(tag, attrs, children) {
    var el = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') el.textContent = attrs[k];
      else if (k === 'className') el.className = attrs[k];
      else if (attrs[k] !== undefined && attrs[k] !== null) el.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) el.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return el;
  }
`;
