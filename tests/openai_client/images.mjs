// OpenAI's own Node client (the npm package "openai", pinned in package.json)
// against mold serve's POST /v1/images/generations, as an existing client
// would use it: only baseURL and apiKey changed. Run by
// tests/net/openai_client_test.cpp:
//   node images.mjs PORT KEY basic   images as base64 and by address, and
//                                    the client's errors for 400, 401, 404
//   node images.mjs PORT KEY busy    a full queue: 503 with Retry-After,
//                                    then the client's own retry succeeding
// Prints one line per check ("ok NAME" or "FAIL NAME: why"); exits 1 when a
// check failed.
import OpenAI from "openai";

const [port, key, scenario] = process.argv.slice(2);
const baseURL = `http://127.0.0.1:${port}/v1`;
const client = (options = {}) =>
  new OpenAI({ baseURL, apiKey: key, maxRetries: 0, timeout: 60000, ...options });
// mold's own fields go along as extra body fields: a small, quick image.
const small = { size: "64x64", steps: 2 };
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
let failed = 0;

function check(name, ok, why) {
  if (ok) console.log(`ok ${name}`);
  else {
    failed++;
    console.log(`FAIL ${name}: ${why}`);
  }
}

function isPng(bytes) {
  return bytes.length > PNG.length && bytes.subarray(0, 8).equals(PNG);
}

function header(error, name) {
  const h = error.headers;
  if (!h) return undefined;
  return typeof h.get === "function" ? h.get(name) : h[name];
}

// Runs `request`, which must fail with `klass` and `status`; returns the error.
async function refused(name, klass, status, request) {
  try {
    await request();
    check(name, false, "it succeeded");
  } catch (e) {
    const ok = e instanceof klass && e.status === status;
    check(name, ok, `${e.constructor.name} ${e.status}: ${e.message}`);
    return e;
  }
  return undefined;
}

async function basic() {
  const two = await client().images.generate({
    model: "z-image-turbo", prompt: "a red fox in the snow", n: 2,
    response_format: "b64_json", user: "test", seed: 7, ...small,
  });
  check("b64_json: two images", two.data.length === 2, JSON.stringify(two).slice(0, 200));
  const pngs = two.data.map((d) => Buffer.from(d.b64_json ?? "", "base64"));
  check("b64_json: both are PNG files", pngs.every(isPng), "not PNG");
  check("b64_json: seeds 7 and 8 differ", !pngs[0].equals(pngs[1]), "the same image twice");
  check("created is unix seconds", Math.abs(two.created - Date.now() / 1000) < 600,
        `created ${two.created}`);

  const byUrl = await client().images.generate({
    prompt: "a red fox in the snow", response_format: "url", seed: 7, ...small,
  });
  const url = byUrl.data[0]?.url ?? "";
  check("url: an address", url.startsWith(`http://127.0.0.1:${port}/v1/`), url);
  const fetched = await fetch(url);
  const bytes = Buffer.from(await fetched.arrayBuffer());
  check("url: the address serves the PNG", fetched.status === 200 && isPng(bytes),
        `status ${fetched.status}`);
  check("url: the same image as seed 7's b64_json", bytes.equals(pngs[0]),
        "a different image");
  // A proxy or CDN adds parameters of its own: the address still works.
  const tagged = await fetch(`${url}&utm_source=cdn&x=1`);
  check("url: extra query parameters are ignored", tagged.status === 200,
        `status ${tagged.status}`);

  // The documented range with the server's default queue: n 10.
  const ten = await client().images.generate({ prompt: "a red fox", n: 10, seed: 1, ...small });
  check("n 10 with the default queue", ten.data.length === 10, `${ten.data.length} images`);
  // mold's own fields come along, tiny among them.
  const tiny = await client().images.generate({ prompt: "x", tiny: true, ...small });
  check("mold's tiny field passes", isPng(Buffer.from(tiny.data[0]?.b64_json ?? "", "base64")),
        "no PNG");

  // The models this server runs, as OpenAI lists its own.
  const ids = [];
  for await (const m of client().models.list()) ids.push(m.id);
  check("models.list has z-image-turbo and its variants",
        ids.includes("z-image-turbo") && ids.includes("z-image-turbo:bf16"), ids.join(","));
  const one = await client().models.retrieve("qwen-image-edit-2511:q4");
  check("models.retrieve a variant", one.id === "qwen-image-edit-2511:q4" &&
        one.object === "model", JSON.stringify(one));
  const none = await refused("models.retrieve dall-e-3: NotFoundError 404",
    OpenAI.NotFoundError, 404, () => client().models.retrieve("dall-e-3"));
  check("its 404 says model_not_found", none?.code === "model_not_found", `code ${none?.code}`);

  const size = await refused("a size mold refuses: BadRequestError 400",
    OpenAI.BadRequestError, 400,
    () => client().images.generate({ prompt: "x", size: "17x17", steps: 2 }));
  check("the 400 names size", size?.param === "size" && /size "17x17"/.test(size?.message),
        `param ${size?.param}: ${size?.message}`);
  const quality = await refused("quality hd: BadRequestError 400",
    OpenAI.BadRequestError, 400,
    () => client().images.generate({ prompt: "x", quality: "hd", ...small }));
  check("the 400 names quality", quality?.param === "quality", `param ${quality?.param}`);
  await refused("a wrong key: AuthenticationError 401", OpenAI.AuthenticationError, 401,
    () => client({ apiKey: "not-the-key" }).images.generate({ prompt: "x", ...small }));
  const model = await refused("an unknown model: NotFoundError 404", OpenAI.NotFoundError, 404,
    () => client().images.generate({ model: "dall-e-3", prompt: "x", ...small }));
  check("the 404 says model_not_found", model?.code === "model_not_found", `code ${model?.code}`);
}

async function busy() {
  // The server runs a job and has no queue: the client is told to come back.
  const full = await refused("a full queue: InternalServerError 503",
    OpenAI.InternalServerError, 503,
    () => client().images.generate({ prompt: "x", ...small }));
  const after = Number(header(full ?? {}, "retry-after"));
  check("the 503 says Retry-After", after >= 1 && after <= 60, `retry-after ${after}`);
  check("the 503 says queue_full", full?.code === "queue_full", `code ${full?.code}`);
  // With its retries on (as by default), the client waits Retry-After and
  // tries again: the test lets the running job end meanwhile.
  const started = Date.now();
  const retried = await client({ maxRetries: 4 }).images.generate({ prompt: "x", ...small });
  check("the client's retry gets the image",
        isPng(Buffer.from(retried.data[0]?.b64_json ?? "", "base64")), "no PNG");
  console.log(`retried after ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

try {
  await (scenario === "busy" ? busy() : basic());
} catch (e) {
  check("no unexpected error", false, `${e.constructor.name}: ${e.message}`);
}
process.exit(failed ? 1 : 0);
