// The console's script on every page (the Content-Security-Policy allows
// only the console's own files, and no inline script; the segment
// builder adds segment_builder.js): it watches import runs until they
// are done, and uploads files with a progress bar and drag and drop.
// Every page works without it, except that runs then need a reload.
'use strict';

(function () {
  // watch polls a run's status, shows its counts, and reloads the page
  // once the run is done, so that the page shows what the run changed.
  function watch(el) {
    var url = el.getAttribute('data-watch');
    function tick() {
      fetch(url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (r) {
          if (!r.ok) { throw new Error('status ' + r.status); }
          return r.json();
        })
        .then(function (s) {
          ['received', 'accepted', 'rejected'].forEach(function (k) {
            var c = el.querySelector('[data-count="' + k + '"]');
            if (c) { c.textContent = s[k]; }
          });
          var st = el.querySelector('.state');
          if (st) { st.textContent = s.state; }
          if (s.done) { window.location.reload(); } else { setTimeout(tick, 400); }
        })
        .catch(function () { setTimeout(tick, 2000); });
    }
    setTimeout(tick, 200);
  }

  // upload sends the form with XMLHttpRequest, whose upload events give
  // the progress, and opens the run's page once it is staged.
  function upload(form) {
    var input = form.querySelector('input[type=file]');
    var drop = form.querySelector('.drop');
    var label = drop.querySelector('span');
    var bar = form.querySelector('progress');
    var error = form.querySelector('.error');
    var button = form.querySelector('button[type=submit]');

    function chosen() {
      if (input.files.length) { label.textContent = input.files[0].name; }
    }
    input.addEventListener('change', chosen);
    ['dragenter', 'dragover'].forEach(function (t) {
      drop.addEventListener(t, function (e) { e.preventDefault(); drop.classList.add('over'); });
    });
    ['dragleave', 'drop'].forEach(function (t) {
      drop.addEventListener(t, function () { drop.classList.remove('over'); });
    });
    drop.addEventListener('drop', function (e) {
      e.preventDefault();
      if (e.dataTransfer && e.dataTransfer.files.length) {
        input.files = e.dataTransfer.files;
        chosen();
      }
    });

    form.addEventListener('submit', function (e) {
      e.preventDefault();
      if (!input.files.length) { return; }
      var xhr = new XMLHttpRequest();
      xhr.open('POST', form.action);
      xhr.setRequestHeader('Accept', 'application/json');
      bar.hidden = false;
      bar.value = 0;
      error.hidden = true;
      button.disabled = true;
      xhr.upload.addEventListener('progress', function (p) {
        if (p.lengthComputable) { bar.value = Math.round(p.loaded / p.total * 100); }
      });
      xhr.addEventListener('load', function () {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (ignored) { body = null; }
        if (xhr.status === 200 && body && body.url) {
          bar.value = 100;
          window.location.assign(body.url);
          return;
        }
        button.disabled = false;
        bar.hidden = true;
        error.textContent = (body && body.error && body.error.message) || ('The upload failed (' + xhr.status + ').');
        error.hidden = false;
      });
      xhr.addEventListener('error', function () {
        button.disabled = false;
        bar.hidden = true;
        error.textContent = 'The upload failed: the connection was lost.';
        error.hidden = false;
      });
      xhr.send(new FormData(form));
    });
  }

  document.querySelectorAll('[data-watch]').forEach(watch);
  var form = document.getElementById('upload-form');
  if (form) { upload(form); }
})();
