#!/usr/bin/env python3
"""Check the profile-extraction evaluation table and (optionally) score predictions.

Standard library only. Run from the repository root or anywhere:

    python3 data/profile_eval/check_table.py                  # validate + counts
    python3 data/profile_eval/check_table.py --oracle         # + score the table against itself (must be 1.0/1.0)
    python3 data/profile_eval/check_table.py --score PRED.jsonl [--split test|dev|all]

PRED.jsonl: one object per line, {"id": "en-001", "pred": {"key": value or [values], ...}}
(the profile an extractor produced from that one message, starting from an empty profile).
Rows of the table missing from PRED count as "predicted nothing".

The canonical keys, their types and aliases are read from SCHEMA.md next to this file;
this script is the reference implementation of the scoring rules that SCHEMA.md describes.
Exit status 0 when the table is valid (and, with --oracle, scores 1.0/1.0), 1 otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLE = HERE / "sentences.jsonl"
SCHEMA = HERE / "SCHEMA.md"

LANGS = ("en", "zh", "mixed")
ID_PREFIX = {"en": "en", "zh": "zh", "mixed": "mx"}
GUARDS = ("third_party", "hypothetical", "question", "past", "temporary", "negation", "other")
SPLITS = ("dev", "test")
FIELDS = {"id", "lang", "text", "expect", "history", "guard", "split"}
REQUIRED = FIELDS - {"history"}
ENTITY_KEYS = ("partner", "children", "family", "pets")
PEOPLE_KEYS = ("partner", "children", "family")


def split_of(row_id: str) -> str:
    """The split rule: first byte of sha1(id, UTF-8) even -> dev, odd -> test."""
    return "dev" if hashlib.sha1(row_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


# -- schema (from SCHEMA.md) ------------------------------------------------------------

def load_schema(path: Path = SCHEMA) -> tuple[dict[str, str], dict[str, str]]:
    """Return ({key: type}, {alias: key}) from the "## Canonical keys" table of SCHEMA.md."""
    types: dict[str, str] = {}
    aliases: dict[str, str] = {}
    in_section = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            in_section = line.strip().lower() == "## canonical keys"
            continue
        if not in_section or not line.startswith("| `"):
            continue
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        key = cols[0].strip("`")
        typ = cols[1].split()[0].strip("`")
        types[key] = typ
        for alias in cols[3].split(","):
            alias = alias.strip().strip("`")
            if alias and alias != "—":
                aliases[normalize_key(alias)] = key
    if not types:
        raise SystemExit(f"{path}: no canonical key table found")
    return types, aliases


def normalize_key(key: str) -> str:
    key = unicodedata.normalize("NFKC", str(key)).casefold().strip()
    return re.sub(r"[\s_\-]+", "_", key).strip("_")


def canonical_key(key: str, types: dict[str, str], aliases: dict[str, str]) -> str:
    k = normalize_key(key)
    if k in types:
        return k
    if k in aliases:
        return aliases[k]
    if k.startswith("favorite_") or k.startswith("favourite_") or k.startswith("最喜欢的"):
        return "likes"
    return k  # a free-form key: scored like any other (it can only produce false positives)


# -- value normalisation ------------------------------------------------------------------

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_SPACE_NEAR_CJK = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")
_ARTICLE = re.compile(r"^(?:a|an|the)\s+")
_ZH_QUANT = re.compile(r"^(?:一名|一位|一个|一只|一条|一家)")


def has_cjk(s: str) -> bool:
    return re.search(f"[{_CJK}]", s) is not None


def base_norm(value: object) -> str:
    """NFKC, casefold, punctuation -> space, emoji dropped, spaces next to CJK removed,
    whitespace collapsed, a leading English article or Chinese quantifier dropped."""
    s = unicodedata.normalize("NFKC", str(value)).casefold()
    out = []
    for ch in s:
        cat = unicodedata.category(ch)
        if cat.startswith("P"):
            out.append(" ")
        elif cat == "So" or cat.startswith("C"):
            out.append(" ")
        else:
            out.append(ch)
    s = " ".join("".join(out).split())
    s = _SPACE_NEAR_CJK.sub("", s)
    s = _ARTICLE.sub("", s)
    s = _ZH_QUANT.sub("", s)
    return s.strip()


def singular(s: str) -> str:
    """Crude English plural folding of the last word (applied to both sides alike)."""
    m = re.search(r"([a-z]+)$", s)
    if not m:
        return s
    w = m.group(1)
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return s[: m.start(1)] + w


LANGUAGE_SYNONYMS = {
    "english": ["英语", "英文"], "mandarin": ["普通话", "国语", "mandarin chinese"],
    "chinese": ["中文", "汉语", "华语"], "cantonese": ["粤语", "广东话"],
    "japanese": ["日语", "日文"], "korean": ["韩语", "韩文", "朝鲜语"], "french": ["法语", "法文"],
    "german": ["德语", "德文"], "spanish": ["西班牙语"], "italian": ["意大利语"],
    "portuguese": ["葡萄牙语"], "russian": ["俄语"], "arabic": ["阿拉伯语"], "hindi": ["印地语"],
    "hokkien": ["闽南话", "闽南语", "福建话"], "turkish": ["土耳其语"], "polish": ["波兰语"],
}
DIET_LABELS = {
    "vegetarian": ["veggie", "素食", "吃素", "素食者", "素食主义", "素食主义者", "素"],
    "vegan": ["纯素", "全素", "吃全素", "吃纯素", "纯素食"],
    "pescatarian": ["pescetarian", "海鲜素", "鱼素"],
    "halal": ["清真"], "kosher": [],
    "gluten free": ["无麸质", "no:gluten"],
    "keto": ["keto diet", "生酮", "生酮饮食"],
}
RELATIONS = {  # relation class -> words (either language); used for partner/children/family kinds
    "wife": ["wife", "missus", "妻子", "老婆", "太太", "媳妇", "夫人"],
    "husband": ["husband", "hubby", "丈夫", "老公", "先生"],
    "spouse": ["spouse", "married", "爱人", "配偶"],
    "girlfriend": ["girlfriend", "gf", "女朋友", "女友"],
    "boyfriend": ["boyfriend", "bf", "男朋友", "男友"],
    "fiancee": ["fiancée", "fiancee", "未婚妻"],
    "fiance": ["fiancé", "fiance", "未婚夫"],
    "partner": ["partner", "对象", "另一半", "伴侣"],
    "son": ["son", "boy", "儿子", "男孩"],
    "daughter": ["daughter", "girl", "女儿", "闺女", "女孩"],
    "child": ["child", "children", "kid", "little one", "baby", "孩子", "小孩", "娃", "宝宝"],
    "mother": ["mother", "mom", "mum", "mama", "妈妈", "母亲", "老妈", "妈"],
    "father": ["father", "dad", "papa", "爸爸", "父亲", "老爸", "爸"],
    "stepfather": ["stepfather", "step dad", "stepdad", "继父"],
    "stepmother": ["stepmother", "step mom", "stepmom", "step mum", "继母"],
    "parents": ["parents", "父母", "爸妈"],
    "brother": ["brother", "哥哥", "弟弟", "兄弟", "哥", "弟"],
    "sister": ["sister", "姐姐", "妹妹", "姐妹", "姐", "妹"],
    "grandmother": ["grandmother", "grandma", "granny", "奶奶", "外婆", "姥姥"],
    "grandfather": ["grandfather", "grandpa", "爷爷", "外公", "姥爷"],
}
UMBRELLA = {
    "spouse": {"wife", "husband", "spouse"},
    "partner": {"wife", "husband", "spouse", "girlfriend", "boyfriend", "fiancee", "fiance", "partner"},
    "child": {"son", "daughter", "child"},
    "parents": {"mother", "father", "parents"},
}


def _synonym_lookup(table: dict[str, list[str]]) -> dict[str, str]:
    return {base_norm(w): canon for canon, words in table.items() for w in [canon, *words]}


_LANG = _synonym_lookup(LANGUAGE_SYNONYMS)
_DIET = _synonym_lookup(DIET_LABELS)
_REL_WORDS = sorted(((base_norm(w), c) for c, ws in RELATIONS.items() for w in [c, *ws]),
                    key=lambda p: -len(p[0]))


def contains_phrase(haystack: str, needle: str) -> bool:
    if not needle:
        return False
    if has_cjk(needle):
        return needle in haystack
    return re.search(rf"(?<![a-z0-9]){re.escape(needle)}(?![a-z0-9])", haystack) is not None


def relation_class(kind: str) -> str | None:
    for word, canon in _REL_WORDS:
        if contains_phrase(kind, word) or contains_phrase(kind, singular(word)):
            return canon
    return None


def parse_entity(raw: str) -> tuple[str, str]:
    """'kind: Name' (canonical), also 'kind named/called Name', 'kind叫Name', 'Name (kind)'."""
    s = unicodedata.normalize("NFKC", str(raw)).strip()
    for pat, order in ((r"^(.*?)\s*[:：]\s*(.*)$", 1), (r"^(.*?)\s+(?:named|called)\s+(.+)$", 1),
                       (rf"^([{_CJK}\w ]+?)叫(.+)$", 1), (r"^(.+?)\s*[(（](.+?)[)）]$", 2)):
        m = re.match(pat, s, flags=re.I)
        if m:
            kind, name = (m.group(1), m.group(2)) if order == 1 else (m.group(2), m.group(1))
            return singular(base_norm(kind)), base_norm(name)
    return singular(base_norm(s)), ""


def date_parts(value: object) -> tuple[str | None, str, str] | None:
    s = str(value).strip()
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", s)
    if m:
        return m.group(1), m.group(2), m.group(3)
    m = re.fullmatch(r"(?:--)?(\d{2})-(\d{2})", s)
    if m:
        return None, m.group(1), m.group(2)
    return None


def norm_value(key: str, value: object):
    """The comparable form of one value element of `key`."""
    if key == "age":
        if isinstance(value, bool):
            return ("bad", str(value))
        if isinstance(value, int):
            return value
        s = base_norm(value)
        return int(s) if s.isdigit() else s
    if key == "birthday":
        return date_parts(value) or ("bad", base_norm(value))
    if key in ENTITY_KEYS:
        return parse_entity(str(value))
    s = base_norm(value)
    if key in ("location", "hometown") and has_cjk(s) and len(s) > 2:
        s = re.sub(r"[市省]$", "", s)
    if key == "timezone":
        return s.replace(" ", "")
    if key == "languages":
        s = re.sub(r"\s*(?:language|语言)$", "", s)
        return _LANG.get(s, s)
    if key == "diet":
        for pre in ("不能吃", "不吃", "不喝", "忌口", "忌", "戒"):
            if s.startswith(pre) and len(s) > len(pre):
                s = "no:" + s[len(pre):]
                break
        else:
            m = re.match(r"^(?:no|don t eat|dont eat|do not eat|don t drink|avoid)\s+(.+)$", s)
            if m:
                s = "no:" + m.group(1)
        if s.startswith("no:"):
            s = "no:" + singular(s[3:].strip())
        return _DIET.get(s, s)
    if key == "allergies":
        s = re.sub(r"^对", "", s)
        s = re.sub(r"\s*(?:过敏|allergy|allergies|allergic)$", "", s)
        return singular(s)
    if key in ("likes", "dislikes"):
        return singular(s)
    return s


def element_matches(key: str, expected_alts: list, predicted) -> bool:
    for exp in expected_alts:
        if key == "birthday":
            if isinstance(exp, tuple) and isinstance(predicted, tuple) and exp[0] != "bad" and predicted[0] != "bad":
                if exp[1:] == predicted[1:] and (exp[0] is None or predicted[0] is None or exp[0] == predicted[0]):
                    return True
            continue
        if key in ENTITY_KEYS:
            ekind, ename = exp
            pkind, pname = predicted
            if ename:
                # the name identifies the element; the kind is descriptive and not scored
                if pname == ename or (not pname and (pkind == ename or contains_tail(pkind, ename))):
                    return True
                continue
            if key in PEOPLE_KEYS:
                ec, pc = relation_class(ekind), relation_class(pkind)
                if ec and pc and (ec == pc or pc in UMBRELLA.get(ec, ())):
                    return True
            elif contains_phrase(pkind, ekind):
                return True
            continue
        if exp == predicted:
            return True
    return False


def contains_tail(s: str, name: str) -> bool:
    return s.endswith(" " + name) or (has_cjk(name) and s.endswith(name))


def elements(value) -> list:
    if isinstance(value, (list, tuple)):
        return [v for v in value if v not in (None, "")]
    return [] if value in (None, "") else [value]


def expected_pairs(expect: dict) -> list[tuple[str, list]]:
    pairs = []
    for key, value in expect.items():
        for el in elements(value):
            alts = el.split("|") if isinstance(el, str) else [el]
            pairs.append((key, [norm_value(key, a.strip() if isinstance(a, str) else a) for a in alts]))
    return pairs


def predicted_pairs(pred: dict, types, aliases) -> list[tuple[str, object]]:
    pairs = []
    for key, value in (pred or {}).items():
        ck = canonical_key(key, types, aliases)
        for el in elements(value):
            pairs.append((ck, norm_value(ck, el)))
    return pairs


def score_row(row: dict, pred: dict, types, aliases) -> tuple[int, int, int]:
    exp = expected_pairs(row["expect"])
    got = predicted_pairs(pred, types, aliases)
    used = [False] * len(got)
    tp = 0
    for key, alts in exp:
        for i, (pk, pv) in enumerate(got):
            if not used[i] and pk == key and element_matches(key, alts, pv):
                used[i] = True
                tp += 1
                break
    return tp, used.count(False), len(exp) - tp


# -- validation ---------------------------------------------------------------------------

def check_value(key: str, typ: str, value, where: str, errors: list[str]) -> None:
    def alts_ok(s: str) -> bool:
        return isinstance(s, str) and all(a.strip() for a in s.split("|"))

    if typ == "list":
        if not isinstance(value, list) or not value or not all(alts_ok(v) for v in value):
            errors.append(f"{where}: {key} must be a non-empty list of non-empty strings")
        return
    if typ == "integer":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 130:
            errors.append(f"{where}: {key} must be an integer age")
        return
    if typ == "date":
        if not isinstance(value, str) or not all(date_parts(a) for a in value.split("|")):
            errors.append(f"{where}: {key} must be YYYY-MM-DD or MM-DD")
        return
    if not alts_ok(value):
        errors.append(f"{where}: {key} must be a non-empty string")


def validate(rows: list[dict], types: dict[str, str]) -> list[str]:
    errors: list[str] = []
    seen: set[str] = set()
    for n, row in enumerate(rows, 1):
        where = f"line {n} ({row.get('id', '?')})"
        missing, extra = REQUIRED - row.keys(), row.keys() - FIELDS
        if missing or extra:
            errors.append(f"{where}: missing fields {sorted(missing)}, unknown fields {sorted(extra)}")
            continue
        rid, lang = row["id"], row["lang"]
        if lang not in LANGS:
            errors.append(f"{where}: lang {lang!r} not in {LANGS}")
        elif not re.fullmatch(rf"{ID_PREFIX[lang]}-\d{{3}}", str(rid)):
            errors.append(f"{where}: id must look like {ID_PREFIX[lang]}-NNN for lang {lang}")
        if rid in seen:
            errors.append(f"{where}: duplicate id")
        seen.add(rid)
        if not isinstance(row["text"], str) or not row["text"].strip():
            errors.append(f"{where}: empty text")
        if row["guard"] is not None and row["guard"] not in GUARDS:
            errors.append(f"{where}: guard {row['guard']!r} not in {GUARDS}")
        if row["split"] not in SPLITS or row["split"] != split_of(str(rid)):
            errors.append(f"{where}: split {row['split']!r} but the rule gives {split_of(str(rid))!r}")
        for field in ("expect", "history"):
            if field not in row:
                continue
            obj = row[field]
            if not isinstance(obj, dict) or (field == "history" and not obj):
                errors.append(f"{where}: {field} must be an object" + (" (non-empty)" if field == "history" else ""))
                continue
            for key, value in obj.items():
                if key not in types:
                    errors.append(f"{where}: {field} key {key!r} is not a canonical key")
                else:
                    check_value(key, types[key], value, f"{where} {field}", errors)
        if not row["expect"] and row["guard"] is None:
            errors.append(f"{where}: a negative row (expect {{}}) must name its guard")
        if "history" in row and isinstance(row["history"], dict) and isinstance(row["expect"], dict):
            for key, hv in row["history"].items():
                ev = row["expect"].get(key)
                if ev is not None:
                    hs = {str(x).split("|")[0].casefold() for x in elements(hv)}
                    es = {str(x).split("|")[0].casefold() for x in elements(ev)}
                    if hs & es:
                        errors.append(f"{where}: {key} value both expected and history")
    return errors


def load_jsonl(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: invalid JSON: {e}") from None
    return rows


# -- reports ------------------------------------------------------------------------------

def counts_report(rows: list[dict], types: dict[str, str]) -> list[str]:
    problems: list[str] = []
    print(f"rows: {len(rows)}   positives: {sum(1 for r in rows if r['expect'])}   "
          f"negatives (expect {{}}): {sum(1 for r in rows if not r['expect'])}   "
          f"expected pairs: {sum(len(expected_pairs(r['expect'])) for r in rows)}")
    print("\nrows per language and split (positive / negative):")
    print(f"  {'lang':8}{'dev':>14}{'test':>14}{'total':>14}")
    for lang in (*LANGS, "all"):
        cells = []
        for sp in (*SPLITS, None):
            sel = [r for r in rows if (lang == "all" or r["lang"] == lang) and (sp is None or r["split"] == sp)]
            pos = sum(1 for r in sel if r["expect"])
            cells.append(f"{len(sel)} ({pos}/{len(sel) - pos})")
        print(f"  {lang:8}" + "".join(f"{c:>14}" for c in cells))
    print("\nguard rows per split (negatives + mixed rows with a fact and a guarded distractor):")
    print(f"  {'guard':13}{'dev neg':>8}{'dev mix':>8}{'test neg':>9}{'test mix':>9}   negatives by lang en/zh/mixed")
    for g in GUARDS:
        c = Counter((r["split"], bool(r["expect"])) for r in rows if r["guard"] == g)
        bylang = Counter(r["lang"] for r in rows if r["guard"] == g and not r["expect"])
        print(f"  {g:13}{c[('dev', False)]:>8}{c[('dev', True)]:>8}{c[('test', False)]:>9}{c[('test', True)]:>9}"
              f"   {bylang['en']}/{bylang['zh']}/{bylang['mixed']}")
    print("\npositive rows per key:  en | zh+mixed   [dev/test]")
    per = defaultdict(Counter)
    for r in rows:
        for k in r["expect"]:
            per[k]["en" if r["lang"] == "en" else "zh"] += 1
            per[k][r["split"]] += 1
    for k in types:
        c = per[k]
        print(f"  {k:12}{c['en']:>4} |{c['zh']:>4}   [{c['dev']}/{c['test']}]")
        if c["en"] < 3 or c["zh"] < 3:
            problems.append(f"key {k} has fewer than 3 positive rows in a language group")
    hist = sum(1 for r in rows if "history" in r)
    print(f"\nrows with history expectations: {hist}")
    for sp in SPLITS:
        langs = {r["lang"] for r in rows if r["split"] == sp}
        guards = {r["guard"] for r in rows if r["split"] == sp and not r["expect"]}
        for lang in LANGS:
            if lang not in langs:
                problems.append(f"split {sp} has no {lang} row")
        for g in GUARDS:
            if g not in guards:
                problems.append(f"split {sp} has no negative row of guard {g}")
            for group in (("en",), ("zh", "mixed")):
                if not any(r["split"] == sp and r["guard"] == g and not r["expect"] and r["lang"] in group for r in rows):
                    problems.append(f"split {sp} has no {'/'.join(group)} negative of guard {g}")
    return problems


def score(rows: list[dict], preds: dict[str, dict], types, aliases, split: str) -> tuple[float, float]:
    sel = [r for r in rows if split == "all" or r["split"] == split]
    acc = defaultdict(Counter)
    firing = Counter()
    for r in sel:
        tp, fp, fn = score_row(r, preds.get(r["id"], {}), types, aliases)
        for group in (r["lang"], "zh+mixed" if r["lang"] != "en" else None, "all"):
            if group:
                acc[group].update(tp=tp, fp=fp, fn=fn, rows=1)
                if not r["expect"]:
                    acc[group]["neg"] += 1
                    firing[group] += fp > 0
    print(f"\nscore on split={split}: per (key, value element) pair")
    print(f"  {'group':10}{'rows':>6}{'TP':>6}{'FP':>6}{'FN':>6}{'precision':>11}{'recall':>8}{'F1':>7}   negatives firing")
    result = (0.0, 0.0)
    for g in ("en", "zh", "mixed", "zh+mixed", "all"):
        c = acc[g]
        p = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else float("nan")
        rc = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else float("nan")
        f1 = 2 * p * rc / (p + rc) if p + rc else 0.0
        print(f"  {g:10}{c['rows']:>6}{c['tp']:>6}{c['fp']:>6}{c['fn']:>6}{p:>11.3f}{rc:>8.3f}{f1:>7.3f}   {firing[g]}/{c['neg']}")
        if g == "all":
            result = (p, rc)
    return result


def oracle_predictions(rows: list[dict]) -> dict[str, dict]:
    """The table's own first alternatives as a prediction (a self-test of the scorer)."""
    first = lambda v: v.split("|")[0] if isinstance(v, str) else v  # noqa: E731
    return {r["id"]: {k: ([first(x) for x in v] if isinstance(v, list) else first(v))
                      for k, v in r["expect"].items()} for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", type=Path, default=TABLE)
    ap.add_argument("--schema", type=Path, default=SCHEMA)
    ap.add_argument("--score", type=Path, help="predictions JSONL to score")
    ap.add_argument("--split", choices=("dev", "test", "all"), default="test")
    ap.add_argument("--oracle", action="store_true", help="score the table against itself")
    args = ap.parse_args(argv)

    types, aliases = load_schema(args.schema)
    rows = load_jsonl(args.table)
    errors = validate(rows, types)
    for e in errors:
        print("ERROR", e)
    if errors:
        print(f"{len(errors)} error(s)")
        return 1
    print(f"{args.table.name}: valid against {args.schema.name} "
          f"({len(types)} canonical keys, {len(aliases)} aliases; split rule reproduces every stored split)\n")
    problems = counts_report(rows, types)
    for p in problems:
        print("PROBLEM", p)
    ok = not problems
    if args.oracle:
        p, r = score(rows, oracle_predictions(rows), types, aliases, "all")
        ok = ok and p == 1.0 and r == 1.0
    if args.score:
        preds = {}
        for obj in load_jsonl(args.score):
            if obj.get("id") not in {r["id"] for r in rows}:
                print(f"ERROR prediction for unknown id {obj.get('id')!r}")
                return 1
            preds[obj["id"]] = obj.get("pred") or {}
        score(rows, preds, types, aliases, args.split)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
