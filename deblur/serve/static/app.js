// deblur's page: photos go to POST /v1/deblur one at a time; each shows its progress, then a before/after
// comparison at full resolution and a download link. Plain JavaScript, no libraries: it works offline.
"use strict";

const queue = [];
let working = false;
let secondsPerMegapixel = 3;

const $ = (selector, root = document) => root.querySelector(selector);

async function showModel() {
  try {
    const info = await (await fetch("/v1/model")).json();
    const arch = info.architecture ? `: width ${info.architecture.width}, ${info.architecture.blocks} blocks` : "";
    // How photos go (`--method`): kernel-aware gives the model the kernel path's deconvolution too; kernel runs
    // no model at all.
    const how = {
      "kernel-aware":
        " Each photo's camera shake is estimated and inverted, and the model, given both, keeps the deconvolution where it is right.",
      kernel: " Photos go by the camera-shake kernel path, not the model.",
    };
    const runs = info.precision ? `, running in ${info.precision}` : ""; // none where no model runs (kernel)
    $("#model").textContent = `Model: ${info.description}${arch}${runs}.${how[info.method] ?? ""}`;
    if (info.method === "kernel") {
      // The server refuses an ensemble there: the kernel path runs no network to average over copies.
      const ensemble = $("#ensemble");
      ensemble.value = "1";
      ensemble.disabled = true;
      ensemble.title = "This server deblurs by the kernel path, which runs no network: there is nothing to average";
    }
    if (info.card) {
      $("#card-title").textContent = `${info.card.title} (from ${info.card.source})`;
      const table = $("#card-table");
      const head = table.createTHead().insertRow();
      for (const column of info.card.columns) head.appendChild(document.createElement("th")).textContent = column;
      const body = table.createTBody();
      for (const row of info.card.rows) {
        const line = body.insertRow();
        for (const cell of row) line.insertCell().textContent = cell;
      }
      $("#card").hidden = false;
    }
  } catch (error) {
    $("#model").textContent = `Could not ask the server about its model: ${error}`;
  }
}

const VIDEO_SUFFIX = /\.(mp4|m4v|mov|mkv|webm|avi|mpe?g|ts|mts|m2ts|wmv|flv|3gp|ogv|m2v|m1v|mpv|vob|mxf|dv|3g2|f4v|asf|divx|m2t)$/i;
const isVideo = (file) => file.type.startsWith("video/") || VIDEO_SUFFIX.test(file.name);

function addPhotos(files) {
  for (const file of files) addPhoto(file, { ensemble: $("#ensemble").value, format: $("#format").value });
  next();
}

// One card in the line.
function addPhoto(file, { ensemble, format }) {
  const card = $("#photo-template").content.firstElementChild.cloneNode(true);
  $(".name", card).textContent = file.name;
  $("#photos").prepend(card);
  queue.push({ file, card, ensemble, format, video: isVideo(file) });
}

async function next() {
  if (working || queue.length === 0) return;
  working = true;
  const item = queue.shift();
  try {
    await (item.video ? deblurVideo(item) : deblur(item));
  } finally {
    working = false;
    next();
  }
}

function setState(card, state, status, progress) {
  card.dataset.state = state;
  $(".status", card).textContent = status;
  if (progress !== undefined) $("progress", card).value = progress;
}

async function estimateSeconds(file, ensemble) {
  try {
    const health = await (await fetch("/healthz")).json();
    if (health.seconds_per_megapixel) secondsPerMegapixel = health.seconds_per_megapixel;
  } catch (error) { /* keep the last estimate */ }
  let megapixels = 1;
  try {
    const bitmap = await createImageBitmap(file);
    megapixels = (bitmap.width * bitmap.height) / 1e6;
    bitmap.close();
  } catch (error) { /* a format the browser cannot show: a rough guess */ }
  return Math.max(0.5, megapixels * secondsPerMegapixel * ensemble);
}

async function deblur(item) {
  const { file, card, ensemble, format } = item;
  const estimate = await estimateSeconds(file, Number(ensemble));
  const response = await send(item, estimate);
  if (response.status === 503) {
    const wait = Number(response.getResponseHeader("Retry-After") || 2);
    setState(card, "waiting", `the server is busy; trying again in ${wait} s`, 0);
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    return deblur(item);
  }
  if (response.status !== 200) {
    let detail = `${response.status} ${response.statusText}`;
    try { detail = JSON.parse(await response.response.text()).detail; } catch (error) { /* not JSON */ }
    setState(card, "failed", `failed: ${detail}`, 0);
    return;
  }
  const result = URL.createObjectURL(response.response);
  const name = downloadName(response.getResponseHeader("Content-Disposition"), file.name, format);
  showResult(
    card,
    URL.createObjectURL(file),
    result,
    name,
    response.getResponseHeader("X-Deblur-Seconds"),
    response.getResponseHeader("X-Deblur-Way"),
    file,
    lostIn(response.getResponseHeader("X-Deblur-Lost"), format) + smallIn(response.getResponseHeader("X-Deblur-Small")),
  );
}

function send({ file, card, ensemble, format }, estimate) {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    const form = new FormData();
    form.append("image", file, file.name);
    request.open("POST", `/v1/deblur?ensemble=${ensemble}&format=${format}`);
    request.responseType = "blob";
    let timer = null;
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) {
        const share = event.loaded / event.total;
        setState(card, "uploading", `uploading ${Math.round(100 * share)}%`, 20 * share);
      }
    };
    request.upload.onload = () => {
      const started = performance.now();
      timer = setInterval(() => {
        const elapsed = (performance.now() - started) / 1000;
        const share = Math.min(0.95, elapsed / estimate);
        setState(card, "deblurring", `deblurring… ${elapsed.toFixed(0)} s (about ${estimate.toFixed(0)} s)`,
          20 + 80 * share);
      }, 200);
    };
    request.onloadend = () => {
      clearInterval(timer);
      resolve(request);
    };
    setState(card, "uploading", "uploading", 0);
    request.send(form);
  });
}

// === Video clips: a job on the server (POST /v1/jobs), followed until it is done ===

function upload(url, form, card) {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    request.open("POST", url);
    request.responseType = "json";
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) {
        const share = event.loaded / event.total;
        setState(card, "uploading", `uploading ${Math.round(100 * share)}%`, 10 * share);
      }
    };
    request.onloadend = () => resolve(request);
    request.send(form);
  });
}

async function deblurVideo(item) {
  const { file, card } = item;
  const form = new FormData();
  form.append("video", file, file.name);
  setState(card, "uploading", "uploading", 0);
  const response = await upload("/v1/jobs", form, card);
  if (response.status === 503) {
    const wait = Number(response.getResponseHeader("Retry-After") || 5);
    setState(card, "waiting", `a clip is being deblurred; trying again in ${wait} s`, 0);
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    return deblurVideo(item);
  }
  if (response.status !== 202) {
    const detail = (response.response && response.response.detail) || `${response.status} ${response.statusText}`;
    setState(card, "failed", `failed: ${detail}`, 0);
    return;
  }
  const job = response.response;
  const cancel = $(".cancel", card);
  $(".job-tools", card).hidden = false;
  let cancelled = false;
  cancel.onclick = async () => {
    cancelled = true;
    cancel.disabled = true;
    await fetch(`/v1/jobs/${job.id}`, { method: "DELETE" });
  };
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (cancelled) {
      setState(card, "failed", "cancelled", 0);
      $(".job-tools", card).hidden = true;
      return;
    }
    let status;
    try {
      status = await (await fetch(`/v1/jobs/${job.id}`)).json();
    } catch (error) {
      continue; // the server is busy answering: ask again
    }
    const total = status.frames_total || 0;
    if (status.state === "running" || status.state === "queued") {
      const eta = status.eta_seconds === null ? "" : `, about ${Math.round(status.eta_seconds)} s left`;
      const share = total ? status.frames_done / total : 0;
      setState(card, "deblurring", `deblurring frame ${status.frames_done} of ${total || "?"}${eta}`, 10 + 90 * share);
      continue;
    }
    $(".job-tools", card).hidden = true;
    if (status.state !== "done") {
      setState(card, "failed", `failed: ${status.error || status.state}`, 0);
      return;
    }
    showVideo(card, URL.createObjectURL(file), `/v1/jobs/${job.id}/result`, status.seconds);
    return;
  }
}

function showVideo(card, beforeUrl, afterUrl, seconds) {
  const before = $(".before-video", card);
  const after = $(".after-video", card);
  // A clip the browser cannot decode (MPEG-2, HEVC in Chromium and Firefox, an AVI) showed as a black box: say so.
  unplayable(before, "blurry: this browser cannot play the clip as it was sent (its codec or container)", () => {
    if (!after.hidden) $("figcaption", after.closest("figure")).textContent = "deblurred";  // nothing plays in step
  });
  unplayable(after, "deblurred: this browser cannot play it here; Download keeps it");
  before.src = beforeUrl;
  after.src = afterUrl;
  // The deblurred clip leads; the blurry one follows it, frame for frame.
  const follow = () => { if (Math.abs(before.currentTime - after.currentTime) > 0.05) before.currentTime = after.currentTime; };
  after.addEventListener("play", () => { follow(); before.play().catch(() => {}); });
  after.addEventListener("pause", () => before.pause());
  after.addEventListener("seeked", follow);
  const link = $(".download", card);
  link.href = afterUrl;
  link.download = ""; // the server's name: <name>-deblurred.mp4 (or .mkv, .mov)
  $(".videos", card).hidden = false;
  $(".viewport", card).hidden = true;
  $(".zoom", card).hidden = true;
  $(".strength-control", card).hidden = true;
  $(".timing", card).textContent = seconds ? `deblurred in ${Number(seconds).toFixed(1)} s on the server` : "";
  $(".result", card).hidden = false;
  setState(card, "done", "done", 100);
}

function unplayable(video, said, then = () => {}) {
  const say = () => {
    video.hidden = true;
    $("figcaption", video.closest("figure")).textContent = said;
    then();
  };
  video.addEventListener("error", say);
  // A video track the browser cannot decode beside an audio track it can (HEVC with AAC, as phones record) is no
  // error: the sound plays under a black box.
  video.addEventListener("loadedmetadata", () => { if (video.videoWidth === 0) say(); });
}

// The server's name for the download: RFC 6266's UTF-8 `filename*` where it sends one (a name in another script),
// else its plain `filename`.
function downloadName(disposition, original, format) {
  const utf8 = /filename\*=UTF-8''([^;]+)/i.exec(disposition || "");
  if (utf8) return decodeURIComponent(utf8[1]);
  const match = /filename="([^"]+)"/.exec(disposition || "");
  if (match) return match[1];
  return `${original.replace(/\.[^.]*$/, "")}-deblurred.${format}`;
}

// The way a photo went (`X-Deblur-Way`: deblur.ways).
const WAYS = {
  network: "by the network",
  kernel: "by the camera-shake kernel path",
  "kernel-aware": "by the kernel-aware network",
};

// The photo as the server read it, for a "before" the browser cannot decode itself (HEIC outside Safari):
// strength 0 gives the photo back, and the server then skips the model.
async function serverCopy(file) {
  const form = new FormData();
  form.append("image", file, file.name);
  const response = await fetch("/v1/deblur?strength=0&format=png", { method: "POST", body: form });
  return response.ok ? URL.createObjectURL(await response.blob()) : null;
}

// What the chosen format could not hold of the photo (`X-Deblur-Lost`: deblur.imageio.lost_in), said after the time.
function lostIn(header, format) {
  const said = {
    transparency: "its transparency flattened onto white",
    depth: "its 16 bits written as 8",
  };
  const lost = (header || "").split(",").filter((loss) => said[loss]).map((loss) => said[loss]);
  if (!lost.length) return "";
  const named = { jpg: "JPEG", webp: "WebP" }[format] || format.toUpperCase();
  return `; ${lost.join(" and ")} in ${named} (PNG keeps ${lost.length > 1 ? "them" : "it"})`;
}

// A photo under `X-Deblur-Small` px a side that a network deblurred: a crop comes out worse alone (predict's hint).
function smallIn(header) {
  if (!header) return "";
  return `; under ${header} px a side, a crop comes out better deblurred within its photo, cropped after`;
}

function showResult(card, beforeUrl, afterUrl, name, seconds, way, file = null, notes = "") {
  const before = $(".before", card);
  const after = $(".after", card);
  before.onerror = async () => {
    before.onerror = null;
    const copy = file && await serverCopy(file);
    if (copy) before.src = copy;
  };
  before.src = beforeUrl;
  after.src = afterUrl;
  const link = $(".download", card);
  link.href = afterUrl;
  link.download = name;
  const how = WAYS[way] ? ` ${WAYS[way]}` : "";
  const timing = seconds ? `deblurred${how} in ${Number(seconds).toFixed(1)} s on the server` : "";
  $(".timing", card).textContent = timing + notes;  // what the format lost, and a small photo's hint
  $(".result", card).hidden = false;
  setState(card, "done", "done", 100);
  wireSlider(card);
  wireStrength(card, afterUrl, name);
}

// Restoration strength, in the browser: blurry + s * (deblurred - blurry), the formula of `predict --strength`
// (deblur/strength.py). No new request: both images are already here. At 100% the server's own file is shown.
function wireStrength(card, serverUrl, serverName) {
  const input = $(".strength", card);
  const shown = $(".strength-value", card);
  const after = $(".after", card);
  const link = $(".download", card);
  let pixels = null; // [blurry, deblurred] RGBA, decoded once
  let busy = false;
  let pending = false;
  let blendUrl = null;

  const decode = async () => {
    const read = async (url) => {
      const bitmap = await createImageBitmap(await (await fetch(url)).blob());
      const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
      const context = canvas.getContext("2d");
      context.drawImage(bitmap, 0, 0);
      bitmap.close();
      return context.getImageData(0, 0, canvas.width, canvas.height);
    };
    return Promise.all([read($(".before", card).src), read(serverUrl)]);
  };

  const apply = async () => {
    if (busy) { pending = true; return; }
    busy = true;
    try {
      const strength = Number(input.value) / 100;
      shown.value = `${input.value}%`;
      if (blendUrl) URL.revokeObjectURL(blendUrl);
      blendUrl = null;
      if (strength === 1) {
        after.src = serverUrl;
        link.href = serverUrl;
        link.download = serverName;
        return;
      }
      pixels = pixels || await decode();
      const [blurry, deblurred] = pixels;
      if (blurry.width !== deblurred.width || blurry.height !== deblurred.height) {
        shown.value = "sizes differ";
        return;
      }
      const out = new ImageData(deblurred.width, deblurred.height);
      const [b, d, o] = [blurry.data, deblurred.data, out.data];
      for (let i = 0; i < o.length; i += 4) {
        // Uint8ClampedArray rounds and clips; alpha is the server's.
        o[i] = b[i] + strength * (d[i] - b[i]);
        o[i + 1] = b[i + 1] + strength * (d[i + 1] - b[i + 1]);
        o[i + 2] = b[i + 2] + strength * (d[i + 2] - b[i + 2]);
        o[i + 3] = d[i + 3];
      }
      const canvas = new OffscreenCanvas(out.width, out.height);
      canvas.getContext("2d").putImageData(out, 0, 0);
      blendUrl = URL.createObjectURL(await canvas.convertToBlob({ type: "image/png" }));
      after.src = blendUrl;
      link.href = blendUrl;
      link.download = serverName.replace(/\.[^.]*$/, "") + `-strength${input.value}.png`;
    } catch (error) {
      shown.value = `failed: ${error}`;
    } finally {
      busy = false;
      card.dataset.strength = input.value; // what is shown now (the browser test waits for it)
      if (pending) { pending = false; apply(); }
    }
  };
  input.addEventListener("input", apply);
}

function wireSlider(card) {
  const slider = $(".slider", card);
  const place = (percent) => {
    $(".after", card).style.clipPath = `inset(0 0 0 ${percent}%)`;
    $(".divider", card).style.left = `${percent}%`;
  };
  slider.addEventListener("input", () => place(slider.value));
  const zoom = $(".zoom", card);
  zoom.addEventListener("click", () => {
    const viewport = $(".viewport", card);
    const zoomed = viewport.classList.toggle("zoomed");
    zoom.textContent = zoomed ? "Fit to width" : "Full resolution";
    if (zoomed) {
      viewport.scrollLeft = (viewport.scrollWidth - viewport.clientWidth) * (slider.value / 100);
      viewport.scrollTop = (viewport.scrollHeight - viewport.clientHeight) / 2;
    }
  });
  place(slider.value);
}

const drop = $("#drop");
drop.addEventListener("dragover", (event) => {
  event.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (event) => {
  event.preventDefault();
  drop.classList.remove("over");
  addPhotos([...event.dataTransfer.files].filter(
    (file) => file.type.startsWith("image/") || isVideo(file) || file.type === ""));
});
$("#files").addEventListener("change", (event) => {
  addPhotos([...event.target.files]);
  event.target.value = "";
});
showModel();
