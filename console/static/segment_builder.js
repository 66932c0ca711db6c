// The segment builder's editor (console/templates/segment_builder.html):
// the rule as conditions under "all" or "any", each of which may be
// negated, written as JSON into the form's textarea, which stays the
// rule the form posts (and can be edited as JSON, any rule the API takes);
// and a live count: 400 ms after the last change, the rule's size now,
// asked of POST /console/new-segment/count. Without this script the
// form works as typed JSON with Preview and Create.
'use strict';

(function () {
  var form = document.getElementById('builder');
  var text = document.getElementById('rule');
  var editor = document.getElementById('rule-editor');
  var output = document.getElementById('live-count');
  var details = document.getElementById('rule-json');
  if (!form || !text || !editor || !output) { return; }

  // The operators of a field condition (docs/segments.md, "Rules").
  var OPS = ['eq', 'ne', 'in', 'contains', 'exists', 'gt', 'gte', 'lt', 'lte', 'within_days', 'not_within_days'];
  // The operators on an event's own fields (its "where"): no day window,
  // which is the event condition's own.
  var WHERE_OPS = OPS.filter(function (o) { return o !== 'within_days' && o !== 'not_within_days'; });
  var NUMBERS = { event: ['within_days', 'min_count'], sales: ['within_days', 'min_count', 'min_revenue'] };
  var KINDS = { field: 'Customer field', event: 'Event', sales: 'Sales', segment: 'In segment' };
  // Groups nest at most this deep in the editor (the API takes 16 levels).
  var MAX_DEPTH = 3;

  var root = null;

  function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function only(o, allowed) {
    return Object.keys(o).every(function (k) { return allowed.indexOf(k) >= 0; });
  }

  // valueText is a field condition's value as typed: strings as they
  // are, unless they would read as another JSON value ("5" is "\"5\"").
  function scalarText(v) {
    if (typeof v === 'string') {
      try { JSON.parse(v); return JSON.stringify(v); } catch (notJSON) { return v; }
    }
    return JSON.stringify(v);
  }
  function valueText(op, v) {
    if (op === 'in' && Array.isArray(v)) { return v.map(scalarText).join(', '); }
    return scalarText(v);
  }
  // typedValue reads a typed value: JSON when it is (5, true, "5"),
  // else the text as a string.
  function typedValue(t) {
    try { return JSON.parse(t.trim()); } catch (notJSON) { return t; }
  }
  function fieldValue(op, t) {
    if (op === 'in' && t.trim().charAt(0) !== '[') {
      return t.split(',').map(function (s) { return typedValue(s.trim()); });
    }
    if (op === 'exists') { return t !== 'false'; }
    return typedValue(t);
  }
  // numberValue is a number typed, or the text itself for the server to
  // refuse in its terms.
  function numberValue(t) {
    var s = t.trim();
    return s !== '' && isFinite(Number(s)) ? Number(s) : s;
  }

  // fromRule is the editor's node of a rule, or null when the editor
  // cannot show it (it stays editable as JSON).
  function fromRule(v) {
    if (!isObject(v)) { return null; }
    var keys = Object.keys(v);
    if (keys.length !== 1 && !('field' in v)) { return null; }
    var k = keys[0], n;
    if (k === 'not') {
      n = fromRule(v.not);
      if (!n) { return null; }
      if (n.not) { n = { kind: 'group', op: 'all', not: false, items: [n] }; }
      n.not = true;
      return n;
    }
    if ((k === 'all' || k === 'any') && Array.isArray(v[k])) {
      var items = v[k].map(fromRule);
      if (items.some(function (i) { return !i; })) { return null; }
      return { kind: 'group', op: k, not: false, items: items };
    }
    if ('field' in v) {
      var op = keys.filter(function (x) { return x !== 'field'; });
      if (keys.length !== 2 || typeof v.field !== 'string' || OPS.indexOf(op[0]) < 0) { return null; }
      return { kind: 'field', not: false, field: v.field, op: op[0], value: valueText(op[0], v[op[0]]) };
    }
    if ((k === 'event' || k === 'sales') && isObject(v[k])) {
      var leaf = v[k];
      var parts = k === 'event' ? ['type', 'within_days', 'min_count', 'where'] : ['within_days', 'min_count', 'min_revenue', 'product_id'];
      if (!only(leaf, parts)) { return null; }
      n = { kind: k, not: false };
      parts.forEach(function (p) {
        if (p !== 'where') { n[p] = p in leaf ? String(leaf[p]) : ''; }
      });
      if (k === 'event') {
        n.where = fromWhere(leaf.where);
        if (!n.where) { return null; }
      }
      return n;
    }
    if (k === 'segment' && typeof v.segment === 'string') {
      return { kind: 'segment', not: false, key: v.segment };
    }
    return null;
  }

  // fromWhere is the editor's list of an event's where-conditions: plain
  // field conditions on its own fields, or null when the list is not one.
  function fromWhere(where) {
    if (where === undefined) { return []; }
    if (!Array.isArray(where)) { return null; }
    var list = where.map(fromRule);
    if (list.some(function (w) { return !w || w.kind !== 'field' || w.not || WHERE_OPS.indexOf(w.op) < 0; })) { return null; }
    return list;
  }

  function fieldLeaf(n) {
    var r = { field: n.field };
    r[n.op] = fieldValue(n.op, n.value);
    return r;
  }

  // toRule is the rule of an editor's node.
  function toRule(n) {
    var r = {};
    if (n.kind === 'group') {
      r[n.op] = n.items.map(toRule);
    } else if (n.kind === 'field') {
      r = fieldLeaf(n);
    } else if (n.kind === 'segment') {
      r.segment = n.key;
    } else {
      var leaf = {};
      if (n.kind === 'event') { leaf.type = n.type; }
      NUMBERS[n.kind].forEach(function (p) {
        if (n[p].trim() !== '') { leaf[p] = numberValue(n[p]); }
      });
      if (n.kind === 'sales' && n.product_id.trim() !== '') { leaf.product_id = n.product_id.trim(); }
      if (n.kind === 'event' && n.where.length > 0) { leaf.where = n.where.map(fieldLeaf); }
      r[n.kind] = leaf;
    }
    return n.not ? { not: r } : r;
  }

  function blank(kind) {
    switch (kind) {
    case 'group': return { kind: 'group', op: 'any', not: false, items: [blank('field')] };
    case 'field': return { kind: 'field', not: false, field: '', op: 'eq', value: '' };
    case 'event': return { kind: 'event', not: false, type: '', within_days: '', min_count: '', where: [] };
    case 'sales': return { kind: 'sales', not: false, within_days: '', min_count: '', min_revenue: '', product_id: '' };
    default: return { kind: 'segment', not: false, key: '' };
    }
  }

  // el makes an element with attributes and children.
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (a) {
      if (a === 'text') { e.textContent = attrs[a]; } else { e.setAttribute(a, attrs[a]); }
    });
    (children || []).forEach(function (c) { e.appendChild(c); });
    return e;
  }

  // input is a labelled input bound to the property p of node n.
  function input(n, p, label, attrs) {
    var i = el('input', Object.assign({ type: 'text', 'data-part': p, 'aria-label': label }, attrs || {}));
    i.value = n[p];
    i.addEventListener('input', function () { n[p] = i.value; changed(); });
    return el('label', { class: 'part' }, [el('span', { text: label }), i]);
  }
  function select(n, p, label, options, rerender) {
    var s = el('select', { 'data-part': p, 'aria-label': label });
    options.forEach(function (o) { s.appendChild(el('option', { value: o[0], text: o[1] })); });
    s.value = n[p];
    s.addEventListener('change', function () {
      n[p] = s.value;
      if (rerender) { render(); }
      changed();
    });
    return el('label', { class: 'part' }, [el('span', { text: label }), s]);
  }
  function notToggle(n) {
    var c = el('input', { type: 'checkbox', 'data-part': 'not' });
    c.checked = n.not;
    c.addEventListener('change', function () { n.not = c.checked; changed(); });
    return el('label', { class: 'not' }, [c, el('span', { text: 'not' })]);
  }
  function button(label, attrs, onClick) {
    var b = el('button', Object.assign({ type: 'button', class: 'small' }, attrs), []);
    b.textContent = label;
    b.addEventListener('click', function () { onClick(); render(); changed(); });
    return b;
  }

  // fieldParts are a field condition's field, operator (of ops) and
  // value; fields suggests the field names.
  function fieldParts(n, ops, fields) {
    if (n.op === 'exists' && n.value !== 'false') { n.value = 'true'; }
    var value = n.op === 'exists'
      ? select(n, 'value', 'value', [['true', 'true'], ['false', 'false']])
      : input(n, 'value', n.op === 'in' ? 'values, by commas' : 'value');
    return [input(n, 'field', 'field', fields ? { list: fields } : {}),
      select(n, 'op', 'operator', ops.map(function (o) { return [o, o]; }), true), value];
  }

  // whereParts are an event condition's conditions on the event's own
  // fields, each removable, and the button that adds one.
  function whereParts(n) {
    var rows = n.where.map(function (w, i) {
      return el('div', { class: 'where', 'data-where': String(i) }, [el('span', { text: i === 0 ? 'where' : 'and' })].concat(
        fieldParts(w, WHERE_OPS, null),
        [button('Remove', { 'data-part': 'remove-where', 'aria-label': 'Remove this condition on the event' }, function () { n.where.splice(i, 1); })]));
    });
    var add = button('+ Where', { 'data-add': 'where', 'aria-label': 'Add a condition on the event\'s fields' }, function () {
      n.where.push({ kind: 'field', not: false, field: '', op: 'eq', value: '' });
    });
    return el('div', { class: 'wheres' }, rows.concat([add]));
  }

  function leafParts(n) {
    switch (n.kind) {
    case 'field':
      return fieldParts(n, OPS, 'customer-fields');
    case 'event':
      return [input(n, 'type', 'type'), input(n, 'within_days', 'within days', { inputmode: 'numeric', placeholder: 'ever' }),
        input(n, 'min_count', 'at least', { inputmode: 'numeric', placeholder: '1' }), whereParts(n)];
    case 'sales':
      return [input(n, 'within_days', 'within days', { inputmode: 'numeric', placeholder: 'ever' }),
        input(n, 'min_count', 'at least', { inputmode: 'numeric', placeholder: '1' }),
        input(n, 'min_revenue', 'revenue at least (cents)', { inputmode: 'numeric' }), input(n, 'product_id', 'product')];
    default:
      return [input(n, 'key', 'segment key')];
    }
  }

  // node renders n at path (indices from the top group, by dots).
  function node(n, path, depth, remove) {
    var del = remove ? [button('Remove', { 'data-part': 'remove', 'aria-label': 'Remove' }, remove)] : [];
    if (n.kind !== 'group') {
      return el('div', { class: 'cond', 'data-path': path, 'data-kind': n.kind },
        [notToggle(n), el('strong', { text: KINDS[n.kind] })].concat(leafParts(n), del));
    }
    var list = el('div', { class: 'items' });
    n.items.forEach(function (item, i) {
      list.appendChild(node(item, path === '' ? String(i) : path + '.' + i, depth + 1, function () { n.items.splice(i, 1); }));
    });
    var adds = ['field', 'event', 'sales', 'segment'].concat(depth < MAX_DEPTH ? ['group'] : []).map(function (kind) {
      return button('+ ' + (kind === 'group' ? 'Group' : KINDS[kind]), { 'data-add': kind }, function () { n.items.push(blank(kind)); });
    });
    var head = el('div', { class: 'group-head' }, [notToggle(n),
      select(n, 'op', 'match', [['all', 'all of'], ['any', 'any of']]), el('span', { text: 'these conditions' })].concat(del));
    return el('fieldset', { class: 'group', 'data-path': path }, [head, list, el('div', { class: 'adds' }, adds)]);
  }

  function render() {
    editor.replaceChildren(node(root, '', 0, null));
  }

  // fromText shows the textarea's rule in the editor when it can; else
  // it says why and leaves the rule to the JSON.
  function fromText() {
    var n = null;
    try { n = fromRule(JSON.parse(text.value)); } catch (notJSON) { n = null; }
    if (!n) {
      editor.replaceChildren(el('p', { class: 'hint', id: 'rule-editor-note',
        text: 'This rule is not shown as conditions (it is not JSON yet, or has parts the editor does not show): edit it as JSON below.' }));
      return;
    }
    root = n.kind === 'group' ? n : { kind: 'group', op: 'all', not: false, items: [n] };
    render();
  }

  // The live count.
  var timer = null;
  var pending = null;
  function show(message, state, size) {
    output.hidden = false;
    output.textContent = message;
    output.setAttribute('data-state', state);
    if (size === undefined) { output.removeAttribute('data-size'); } else { output.setAttribute('data-size', size); }
  }
  function count() {
    if (pending) { pending.abort(); }
    var mine = new AbortController();
    pending = mine;
    fetch(form.getAttribute('data-count'), {
      method: 'POST', credentials: 'same-origin', signal: mine.signal,
      headers: { Accept: 'application/json' }, body: new URLSearchParams({ rule: text.value })
    }).then(function (r) {
      return r.json().catch(function () { return null; }).then(function (body) {
        if (pending !== mine) { return; }
        pending = null;
        if (r.ok && body) {
          show(body.text, 'ok', String(body.size));
        } else {
          show((body && body.error && body.error.message) || ('The count failed (' + r.status + ').'), 'error');
        }
      });
    }).catch(function () {
      if (pending !== mine) { return; }
      pending = null;
      show('The count failed: the connection was lost.', 'error');
    });
  }
  function schedule() {
    clearTimeout(timer);
    if (pending) { pending.abort(); pending = null; }
    show('Counting…', 'pending');
    timer = setTimeout(count, 400);
  }

  // changed writes the editor's rule into the textarea, and counts.
  function changed() {
    text.value = JSON.stringify(toRule(root), null, 2);
    schedule();
  }

  text.addEventListener('input', function () { fromText(); schedule(); });
  editor.hidden = false;
  if (details) { details.open = false; }
  fromText();
  schedule();
})();
