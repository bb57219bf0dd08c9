"""The offline profile rules on sentences written for these tests (not rows of the
evaluation table): statements in English, Chinese and code-switched text produce the
values of docs/profile.md, and every guard — third party, hypothetical/plan, question,
past, temporary, negation, other (role-play, fiction, translation) — keeps facts out in
both languages. Each case checks the whole predicted profile, so an extra fact fails."""

from __future__ import annotations

from typing import Any

import pytest

from hmem.eval.profile_table import prediction
from hmem.profile._rules import find_profile_facts
from hmem.profile.extract import OfflineProfileExtractor

EXTRACTOR = OfflineProfileExtractor()


def _profile(text: str) -> dict[str, Any]:
    return prediction(EXTRACTOR.extract(text))


EN_STATEMENTS: list[tuple[str, dict[str, Any]]] = [
    ("My name's Priya Patel and I'm a data analyst at Spotify.", {"name": "Priya Patel", "occupation": "data analyst", "employer": "Spotify"}),
    ('I live in Austin with my husband and two kids.', {"location": "Austin", "partner": "husband"}),
    ("I'm originally from Lyon but I've lived in Montreal since 2015.", {"hometown": "Lyon", "location": "Montreal"}),
    ("I'm 38 and work as a paramedic.", {"age": 38, "occupation": "paramedic"}),
    ("I'm allergic to shellfish and penicillin.", {"allergies": ["shellfish", "penicillin"]}),
    ("I'm vegetarian, and I don't drink.", {"diet": ["vegetarian", "no:alcohol"]}),
    ('We have two cats, Miso and Tofu.', {"pets": ["cat: Miso", "cat: Tofu"]}),
    ('My wife Aiko is Japanese.', {"partner": "wife: Aiko"}),
    ('I speak French and a little Arabic.', {"languages": ["French", "Arabic"]}),
    ('My birthday is on March 14th.', {"birthday": "03-14"}),
    ('I was born on 4 July 1988.', {"birthday": "1988-07-04"}),
    ('I love hiking, board games and Thai food.', {"likes": ["hiking", "board games", "Thai food"]}),
    ("I can't stand reality TV.", {"dislikes": ["reality TV"]}),
    ("I'm a huge Taylor Swift fan.", {"likes": ["Taylor Swift"]}),
    ("I'm lactose intolerant.", {"allergies": ["lactose"]}),
    ("I'm a second-year medical student at UCL.", {"occupation": "second-year medical student", "major": "medical", "school": "UCL"}),
    ('I moved to Berlin last year.', {"location": "Berlin"}),
    ("I'm based in Singapore.", {"location": "Singapore"}),
    ("I'm Brazilian.", {"nationality": "Brazil"}),
    ("I've got a golden retriever named Max.", {"pets": ["golden retriever: Max"]}),
    ('I have a son, Leo, and a daughter, Mia.', {"children": ["son: Leo", "daughter: Mia"]}),
    ('My daughter is starting school next week.', {"children": ["daughter"]}),
    ('I teach math at a high school in Denver.', {"occupation": "math teacher", "location": "Denver"}),
    ("I'm a software developer.", {"occupation": "software developer"}),
    ("I'm on Central time.", {"timezone": "Central time"}),
    ('My favorite food is sushi.', {"likes": ["sushi"]}),
    ('I prefer tea to coffee.', {"likes": ["tea"]}),
    ('I recently started working at Google as a product manager.', {"employer": "Google", "occupation": "product manager"}),
    ("I'm a stay-at-home mom.", {"occupation": "stay-at-home mom"}),
    ('I turned 30 yesterday.', {"age": 30}),
    ('I grew up in Mumbai and now live in London.', {"hometown": "Mumbai", "location": "London"}),
    ('Nurse here, working nights in Glasgow.', {"occupation": "Nurse", "location": "Glasgow"}),
    ("I'm Sam, a 29 year old accountant from Leeds.", {"name": "Sam", "age": 29, "occupation": "accountant", "hometown": "Leeds"}),
    ('I have celiac disease so no gluten for me.', {"diet": ["gluten-free"]}),
    ("I'm a Spanish teacher in Madrid.", {"occupation": "Spanish teacher", "location": "Madrid"}),
    ("I'm fluent in Korean.", {"languages": ["Korean"]}),
    ('Me and my girlfriend live in Denver.', {"location": "Denver", "partner": "girlfriend"}),
    ('I have an older brother named Kai.', {"family": ["brother: Kai"]}),
    ("I'm a big fan of jazz and blues.", {"likes": ["jazz", "blues"]}),
    ("I don't eat beef or pork.", {"diet": ["no:beef", "no:pork"]}),
    ("I'm a lawyer at a big firm in Chicago.", {"occupation": "lawyer", "location": "Chicago"}),
    ('Currently living in Oslo, working as a UX researcher.', {"location": "Oslo", "occupation": "UX researcher"}),
    ("I'm married with three kids.", {"children": ["child"], "partner": "spouse"}),
    ("I'm a vegan and I'm allergic to soy.", {"diet": ["vegan"], "allergies": ["soy"]}),
    ('I study economics at the LSE.', {"major": "economics", "school": "LSE"}),
    ("I'm a freshman at Stanford.", {"occupation": "student", "school": "Stanford"}),
    ('hey there, names Carlos, i live in san diego and work in construction', {"name": "Carlos", "location": "san diego", "occupation": "construction"}),
    ("I'm a 34yo mechanical engineer living in Houston", {"age": 34, "location": "Houston", "occupation": "mechanical engineer"}),
    ('As a diabetic and a vegetarian, what snacks do you suggest?', {"diet": ["vegetarian"]}),
    ("i'm a mom of two boys, we live just outside Atlanta", {"children": ["son"], "location": "Atlanta"}),
    ("I'm Korean-American and grew up in LA", {"hometown": "LA"}),
    ('My partner and I just bought a house in Portland!', {"partner": "partner", "location": "Portland"}),
    ("I work as an ER nurse at St. Mary's.", {"occupation": "ER nurse", "employer": "St. Mary's"}),
    ('Been vegan for 5 years now', {"diet": ["vegan"]}),
    ("my kid's name is Theo, he's 3", {"children": ["child: Theo"]}),
    ('I have a severe peanut allergy.', {"allergies": ["peanut"]}),
    ('I am allergic to cats, dogs and dust.', {"allergies": ["cats", "dogs", "dust"]}),
    ("I'm retired now, spend most days gardening.", {"occupation": "retired"}),
    ('My husband Raj and I have been married 20 years.', {"partner": "husband: Raj"}),
    ("I'm a barista at Starbucks in Seattle.", {"occupation": "barista", "employer": "Starbucks", "location": "Seattle"}),
    ('I love to cook and bake.', {"likes": ["cooking", "baking"]}),
    ('I absolutely hate spiders and snakes', {"dislikes": ["spiders", "snakes"]}),
    ("I'm a night-shift security guard.", {"occupation": "night-shift security guard"}),
    ('born and raised in Chicago, now in Phoenix', {"hometown": "Chicago", "location": "Phoenix"}),
    ("I'm an American expat living in Berlin.", {"nationality": "United States", "location": "Berlin"}),
    ('We just got a puppy! A beagle named Scout.', {"pets": ["beagle: Scout"]}),
    ('I have two dogs and a cat.', {"pets": ["dog", "cat"]}),
    ("I'm a huge Lakers fan", {"likes": ["Lakers"]}),
    ('I only eat halal meat.', {"diet": ["halal"]}),
    ("I'm a keto guy, so low carb recipes please", {"diet": ["keto"]}),
    ('I speak Tagalog at home and English at work.', {"languages": ["Tagalog", "English"]}),
    ("Honestly I'm not a big fan of cilantro.", {"dislikes": ["cilantro"]}),
    ('I never liked mushrooms.', {"dislikes": ["mushrooms"]}),
    ('Our cat Luna just had kittens.', {"pets": ["cat: Luna"]}),
    ("Hello! I'm Fatima, a pharmacist from Cairo who now lives in Toronto.", {"name": "Fatima", "occupation": "pharmacist", "hometown": "Cairo", "location": "Toronto"}),
    ("I'm 41, a single dad, and I work in IT.", {"age": 41, "occupation": "IT"}),
    ('just moved to the Bay Area for a job at Stripe', {"location": "Bay Area", "employer": "Stripe"}),
    ("I've been teaching high school chemistry for 12 years.", {"occupation": "teacher"}),
    ("I'm gluten-free and dairy-free.", {"diet": ["gluten-free", "dairy-free"]}),
    ("I'm a nurse practitioner in rural Montana.", {"occupation": "nurse practitioner", "location": "Montana"}),
    ('I play the violin and I love baroque music.', {"likes": ["baroque music"]}),
    ('My little girl Zoe turns 5 tomorrow!', {"children": ["daughter: Zoe"]}),
    ('We have a rescue greyhound and two cats.', {"pets": ["greyhound", "cat"]}),
    ('Our son Ethan just started college.', {"children": ["son: Ethan"]}),
    ("I'm Scottish but live in Spain now.", {"nationality": "Scotland", "location": "Spain"}),
    ('my bday is nov 3', {"birthday": "11-03"}),
    ('I was born in 1992 in Manila.', {"hometown": "Manila"}),
    ("I'm from Poland originally, moved to Dublin in 2019.", {"hometown": "Poland", "location": "Dublin"}),
    ("I'm in the Eastern time zone.", {"timezone": "Eastern time"}),
    ("I'm allergic to bees", {"allergies": ["bees"]}),
    ('I really dislike crowds.', {"dislikes": ["crowds"]}),
    ('Big fan of Formula 1 here', {"likes": ["Formula 1"]}),
    ("I'm a software engineer at a startup in Berlin and I speak German and English.", {"occupation": "software engineer", "location": "Berlin", "languages": ["German", "English"]}),
    ("I'm a mom of three and a part-time yoga instructor.", {"occupation": "part-time yoga instructor", "children": ["child"]}),
    ("I'm not really into sports.", {"dislikes": ["sports"]}),
]
ZH_STATEMENTS: list[tuple[str, dict[str, Any]]] = [
    ('我叫王磊，是一名律师。', {"name": "王磊", "occupation": "律师"}),
    ('我在上海工作，住在浦东。', {"location": "浦东"}),
    ('我今年四十岁了。', {"age": 40}),
    ('我的生日是三月八号。', {"birthday": "03-08"}),
    ('我对芒果过敏。', {"allergies": ["芒果"]}),
    ('我养了一只柯基，叫豆豆。', {"pets": ["柯基: 豆豆"]}),
    ('我老婆是老师。', {"partner": "老婆"}),
    ('我有一个女儿。', {"children": ["女儿"]}),
    ('我是湖南人，现在在广州工作。', {"hometown": "湖南", "location": "广州"}),
    ('我喜欢看电影和听音乐。', {"likes": ["看电影", "听音乐"]}),
    ('我不吃辣。', {"diet": ["不吃辣"]}),
    ('我是素食主义者。', {"diet": ["素食主义者"]}),
    ('我会说英语和日语。', {"languages": ["英语", "日语"]}),
    ('我在字节跳动做产品经理。', {"occupation": "产品经理", "employer": "字节跳动"}),
    ('我是浙江大学的学生。', {"school": "浙江大学", "occupation": "学生"}),
    ('我搬到深圳三年了。', {"location": "深圳"}),
    ('我最喜欢的歌手是周杰伦。', {"likes": ["周杰伦"]}),
    ('我讨厌下雨天。', {"dislikes": ["下雨天"]}),
    ('我是一名护士，在人民医院上班。', {"occupation": "护士", "employer": "人民医院"}),
    ('我老家在河南，现在定居杭州。', {"hometown": "河南", "location": "杭州"}),
    ('我叫小美，今年22岁，是个大学生。', {"name": "小美", "age": 22, "occupation": "大学生"}),
    ('我有两个儿子。', {"children": ["儿子"]}),
    ('我家有一只橘猫叫胖虎。', {"pets": ["橘猫: 胖虎"]}),
    ('我是做设计的。', {"occupation": "设计"}),
    ('本人程序员，坐标北京。', {"occupation": "程序员", "location": "北京"}),
    ('我花生过敏。', {"allergies": ["花生"]}),
    ('我爱打游戏。', {"likes": ["打游戏"]}),
    ('我是美国人。', {"nationality": "美国"}),
    ('我老公在华为上班。', {"partner": "老公"}),
    ("I'm 张伟，来自北京。", {"name": "张伟", "hometown": "北京"}),
    ('我现在在深圳一家互联网公司当程序员', {"location": "深圳", "occupation": "程序员"}),
    ('我是一个全职爸爸，有三个孩子', {"occupation": "全职爸爸", "children": ["孩子"]}),
    ('我今年35了，在银行上班', {"age": 35}),
    ('我老公叫张强，我们结婚五年了', {"partner": "老公: 张强"}),
    ('我一直住在西安，从来没离开过', {"location": "西安"}),
    ('我对青霉素过敏，开药的时候注意', {"allergies": ["青霉素"]}),
    ('我是广东人，会讲粤语和普通话', {"hometown": "广东", "languages": ["粤语", "普通话"]}),
    ('我特别喜欢吃日料，尤其是寿司', {"likes": ["吃日料", "寿司"]}),
    ('我从来不吃香菜', {"diet": ["不吃香菜"]}),
    ('我家有两只狗，一只金毛一只泰迪', {"pets": ["金毛", "泰迪"]}),
    ('我是学医的，现在在读研究生', {"major": "医", "occupation": "研究生"}),
    ('我在北大读博士', {"school": "北大", "occupation": "博士生"}),
    ('我媳妇是四川的，特别能吃辣', {"partner": "媳妇"}),
    ('我刚辞职，现在在家带娃', {"children": ["娃"]}),
    ('我不喜欢吃甜食', {"dislikes": ["吃甜食"]}),
    ('我每天都去健身房，很喜欢撸铁', {"likes": ["撸铁"]}),
    ('我女朋友在北京工作，我在天津', {"partner": "女朋友", "location": "天津"}),
    ('我属猴的，今年刚好36', {"age": 36}),
    ('我生日在12月24日，平安夜', {"birthday": "12-24"}),
    ('我是回民，不吃猪肉', {"diet": ["不吃猪肉"]}),
    ('我家宝宝刚满一岁', {"children": ["宝宝"]}),
    ('我是陈晨，今年28，在成都做UI设计', {"name": "陈晨", "age": 28, "location": "成都", "occupation": "UI设计"}),
    ('我老家是江西的，现在住在厦门', {"hometown": "江西", "location": "厦门"}),
    ('我儿子今年八岁，女儿五岁', {"children": ["儿子", "女儿"]}),
    ('我养了两只兔子', {"pets": ["兔子"]}),
    ('我是穆斯林，只吃清真食品', {"diet": ["清真"]}),
    ('我平时喜欢跑步、游泳', {"likes": ["跑步", "游泳"]}),
    ('我在一家律所当律师', {"occupation": "律师"}),
    ('本人95年的，在广州读研', {"location": "广州", "occupation": "研究生"}),
    ('我生日是2月29号', {"birthday": "02-29"}),
    ('我海鲜过敏，虾蟹都不能吃', {"allergies": ["海鲜"]}),
    ('我喜欢安静，不喜欢人多的地方', {"likes": ["安静"], "dislikes": ["人多的地方"]}),
    ('我是台湾人，在上海工作三年了', {"hometown": "台湾", "location": "上海"}),
    ('我会一点法语', {"languages": ["法语"]}),
    ('我男朋友是程序员', {"partner": "男朋友"}),
    ('我是国企员工', {"occupation": "国企员工"}),
    ('我不抽烟也不喝酒', {"diet": ["不喝酒"]}),
]
MIXED_STATEMENTS: list[tuple[str, dict[str, Any]]] = [
    ('我是一名 software engineer，在 Google 上班。', {"occupation": "software engineer", "employer": "Google"}),
    ('我对 peanuts 过敏。', {"allergies": ["peanuts"]}),
    ('我最近搬到了 Seattle。', {"location": "Seattle"}),
    ('我有一只 corgi 叫 Mochi。', {"pets": ["corgi: Mochi"]}),
    ('My hometown is 西安.', {"hometown": "西安"}),
    ('我 boyfriend 是 French 的。', {"partner": "boyfriend"}),
    ('I work at 腾讯 as a designer.', {"employer": "腾讯", "occupation": "designer"}),
    ('我的英文名叫Tony', {"name": "Tony"}),
    ('我在 Microsoft 做 PM，base 西雅图', {"occupation": "PM", "employer": "Microsoft", "location": "西雅图"}),
    ('我是 lactose intolerant 的', {"allergies": ["lactose"]}),
    ('最近在 Melbourne 读 master，专业是 accounting', {"location": "Melbourne", "occupation": "研究生", "major": "accounting"}),
    ('我 hometown 是 Chengdu', {"hometown": "Chengdu"}),
    ('我的 cat 叫 Oreo', {"pets": ["cat: Oreo"]}),
    ('我很喜欢 hiking 和 camping', {"likes": ["hiking", "camping"]}),
    ("I'm vegetarian 但是吃鸡蛋", {"diet": ["vegetarian"]}),
    ('我是 PhD student，在 MIT 做 research', {"occupation": "PhD student", "school": "MIT"}),
    ('我住在 Vancouver，平时喜欢 skiing', {"location": "Vancouver", "likes": ["skiing"]}),
    ("I'm 小王, 在 Shanghai 做 consultant", {"name": "小王", "location": "Shanghai", "occupation": "consultant"}),
    ('我 husband 是 Australian', {"partner": "husband"}),
    ('I have 两个 kids', {"children": ["child"]}),
    ('我 allergic to 芒果', {"allergies": ["芒果"]}),
    ('我不是 local，是从 Hong Kong 搬过来的', {"hometown": "Hong Kong"}),
    ('我的 birthday 是 May 5th', {"birthday": "05-05"}),
]


@pytest.mark.parametrize(("text", "expected"), EN_STATEMENTS + ZH_STATEMENTS + MIXED_STATEMENTS)
def test_statements_give_exactly_these_facts(text: str, expected: dict[str, Any]) -> None:
    assert _profile(text) == expected


#: Sentences that must change nothing current, by guard, in both languages.
GUARDED: dict[str, list[str]] = {
    "third_party": [
        "My brother lives in Chicago.", "My mom is a nurse.", "He's vegan.", "My friend Sarah is allergic to nuts.",
        "My sister's dog is called Rex.", "My boss is from Texas and loves golf.", "My dad was a firefighter.",
        "my roommate has a snake named Noodle", "My coworker Jen is obsessed with K-pop.", "My parents are from Kerala.",
        "我妈妈住在成都。", "我同事养了一条狗。", "他是医生。", "我朋友对海鲜过敏。", "我姐姐在伦敦工作。", "我爸是医生",
        "我邻居家的狗很吵", "我哥在美国读书", "my sister 在 Tokyo 工作。", "my mom 是 teacher", "my colleague 是四川人",
        "我表哥是医生", "我室友在腾讯上班", "我同学是素食者", "我老板对花生过敏", "我朋友刚搬到成都", "隔壁老王是四川人",
        "小明住在北京", "小王是医生", "张伟是我同事，他在腾讯上班", "我是医生的女儿", "I have a dog walker who comes twice a week",
    ],
    "hypothetical": [
        "If I lived in Paris I'd eat croissants every day.", "I'm thinking of moving to Seattle.",
        "I want to become a pilot.", "I might get a puppy next year.", "I'd love to learn Italian.",
        "If we move to Denver, will I need a car?", "I hope to retire in Portugal.", "I wish I was a pilot.",
        "I'm turning 50 next month, any party ideas?", "We're expecting twins in March!",
        "我打算明年去日本留学。", "如果我有钱，我就买房。", "我想养一只猫。", "等我毕业了就去北京工作。",
        "要是能住在海边就好了", "我想学吉他", "明年我可能要去上海工作", "我 planning to move to 深圳",
        "我打算辞职去旅行", "我准备考研", "我在考虑学日语", "我可能会搬去杭州", "以后想养只狗", "假如我是老板，我就给大家涨工资",
        "我要去北京工作了", "我下个月搬到深圳", "我会搬到上海", "We have a baby on the way",
    ],
    "question": [
        "Is Lisbon a good place to live?", "What should a vegan eat for protein?", "Can you suggest a gift for my wife?",
        "Do you speak French?", "Any tips for a first-time dog owner?", "What's the best way to learn Japanese?",
        "北京哪里好玩？", "素食者吃什么补充蛋白质？", "你觉得我适合当老师吗？", "你喜欢什么颜色？",
        "杭州适合养老吗", "我是不是应该换工作", "对猫过敏怎么办", "哪个城市适合年轻人",
    ],
    "past": [
        "I used to live in Tokyo.", "I was a teacher for ten years.", "I no longer work at IBM.",
        "Back in college I loved rugby.", "My grandma lived in Sicily.", "I quit my job at Amazon last month.",
        "I was vegetarian for years but now eat fish.", "My ex-wife lives in Boston.",
        "我以前在北京住过几年。", "我小时候很喜欢画画。", "我之前是一名护士。", "我以前养过一只猫", "I 以前 lived in Paris",
        "我去年在英国留学过一年", "我曾经在阿里工作过", "我以前是素食者", "我原来住在南京", "前几年我在深圳打工",
        "我退休前是老师",
    ],
    "temporary": [
        "I'm in Rome for a few days.", "I'm visiting my parents in Ohio this weekend.", "I'm house-sitting a cat this week.",
        "I'm heading to Paris for the weekend.", "I'm staying with my aunt in Leeds this month.",
        "Where can I find good ramen in Tokyo? I'm in Shinjuku till Friday.",
        "我这几天在杭州出差。", "国庆我在三亚度假。", "这个月我在北京实习", "我在北京出差几天", "我暂时住在朋友家",
        "我在三亚度假呢", "我在成都待了一周", "我今天在杭州",
    ],
    "negation": [
        "I'm not married.", "I don't have any pets.", "I'm not allergic to anything.", "I don't live in London.",
        "I'm not a morning person.", "I don't have a car.", "I'm not from around here.", "I'm an only child.",
        "我不是上海人。", "我没有孩子。", "我不会说粤语。", "我没有兄弟姐妹", "我不是 vegan，只是不太吃肉。",
        "我不是程序员", "我不住在北京", "我没养宠物", "我对花生不过敏", "我没结婚", "I'm Jewish",
    ],
    "other": [
        "Pretend you're my girlfriend named Lily.", "How do you say 'I am a doctor' in Spanish?",
        "Write a story about a teacher who lives in Paris.", "In my novel the hero is a vet from Oslo.",
        "I'm writing a novel about a chef who lives in Naples.", "Translate 'I live in Madrid' into French.",
        "Let's say I'm a farmer in Kansas, how would that change things?",
        "假装你是我的女朋友。", "“我是医生”用英语怎么说？", "写一个关于老师的故事。", "帮我翻译一下：我是一名医生",
        "你好，我是李老师", "用英语怎么说我住在北京", "角色扮演：我是一个海盗", "这句话怎么翻译：我喜欢猫",
        "开个玩笑，我是火星人",
    ],
}


@pytest.mark.parametrize(
    ("guard", "text"), [(guard, text) for guard, texts in GUARDED.items() for text in texts]
)
def test_guarded_sentences_change_nothing(guard: str, text: str) -> None:
    assert _profile(text) == {}, guard


def test_every_guard_is_tested_in_both_languages() -> None:
    for guard, texts in GUARDED.items():
        assert any(not any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts), guard
        assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts), guard


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a fact next to a guarded distractor: only the user's own current fact
        ("My sister is a nurse and I'm a teacher.", {"occupation": "teacher"}),
        ("I used to live in Boston but now I live in Austin.", {"location": "Austin"}),
        ("I'm vegan, can you recommend a restaurant?", {"diet": ["vegan"]}),
        ("I live in Leeds and I'm in London this week for work.", {"location": "Leeds"}),
        ("我妈是老师，我是护士。", {"occupation": "护士"}),
        ("我住在广州，这周在深圳出差。", {"location": "广州"}),
        ("我以前住在北京，现在住在上海。", {"location": "上海"}),
        ("如果可以的话我想去法国，不过我现在在杭州工作。", {"location": "杭州"}),
        ("My son is a doctor in Boston.", {"children": ["son"]}),
        ("我老婆喜欢猫", {"partner": "老婆"}),
        ("我儿子喜欢恐龙", {"children": ["儿子"]}),
        ("我养了一只叫咪咪的猫", {"pets": ["猫: 咪咪"]}),
        ("I'm from a small town in Ohio", {"hometown": "Ohio"}),
        ("I grew up on a farm in Iowa", {"hometown": "Iowa"}),
        ("我是计算机专业的学生", {"major": "计算机", "occupation": "学生"}),
        ("我对猫毛和花粉过敏", {"allergies": ["猫毛", "花粉"]}),
        ("我姓王，叫王小明", {"name": "王小明"}),
    ],
)
def test_a_fact_survives_its_guarded_neighbour(text: str, expected: dict[str, Any]) -> None:
    assert _profile(text) == expected


def test_removals_deletions_and_provenance_of_the_words() -> None:
    found = {(f.key, f.operation): f for f in find_profile_facts("I don't like jazz anymore. Forget my birthday.")}
    assert found[("likes", "remove")].value == ("jazz",)
    assert found[("birthday", "delete")].value is None
    assert "jazz" in found[("likes", "remove")].evidence  # the words that stated it
    assert _profile("I no longer like jazz.") == {}  # a removal is not a current value
    assert [(f.key, f.value, f.operation) for f in find_profile_facts("我不再喜欢咖啡了")] == [
        ("likes", ("咖啡",), "remove")]
    assert [(f.key, f.operation) for f in find_profile_facts("Biscuit passed away last week.")] == [("pets", "remove")]


def test_one_value_per_scalar_key_the_most_confident() -> None:
    assert _profile("My name is Robert, but call me Bob.")["name"] == "Robert"
    assert _profile("我们全家移民到了澳洲，现在住悉尼")["location"] == "悉尼"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # phrasings the rules learnt from the table's new dev rows (issue #13 §2), in sentences of their own
        ("can't stand olives, they're so salty", {"dislikes": ["olives"]}),
        ("not a fan of the new design tbh", {}),
        ("Love the new update!", {}),
        ("I'm a mom of two boys, Sam and Ollie", {"children": ["son: Sam", "son: Ollie"]}),
        ("I work with two kids with autism at a school", {}),
        ("I have a hamster called Kiwi", {"pets": ["hamster: Kiwi"]}),
        ("Hello, I'm Dr. Amara Obi, a pediatrician", {"name": "Amara Obi", "occupation": "pediatrician"}),
        ("I'm Noor, 24, nursing student at UCL", {"name": "Noor", "age": 24, "occupation": "nursing student",
                                                  "major": "nursing", "school": "UCL"}),
        ("I got my master's in history from McGill", {"major": "history", "school": "McGill"}),
        ("I'm in Perth, so AWST", {"location": "Perth", "timezone": "AWST"}),
        ("I've lived in Seville all my life", {"hometown": "Seville", "location": "Seville"}),
        ("now my sister lives in Oslo", {}),
        ("pls note I'm 16", {"age": 16}),
        ("My grandparents, Ada and Ben, live with us", {"family": ["grandparents: Ada", "grandparents: Ben"]}),
        ("我是 Sofia，在 Spotify 做 designer", {"name": "Sofia", "employer": "Spotify", "occupation": "designer"}),
        ("我是 Swiftie 哈哈", {}),
        ("我是日本人，在杭州工作", {"nationality": "日本", "location": "杭州"}),
        ("我是 Filipino，在马尼拉长大", {"nationality": "Philippines", "hometown": "马尼拉"}),
        ("我在农村长大", {}),
        ("我在 GMT+9", {"timezone": "GMT+9"}),
        ("我在 IT 部门上班", {}),
        ("我老婆 Lisa 是老师", {"partner": "老婆: Lisa"}),
        ("我女儿 English 说得比中文好", {"children": ["女儿"]}),
        ("我在湘雅医院上班", {"employer": "湘雅医院"}),
        ("我在初中教数学", {"occupation": "数学老师"}),
        ("我有尘螨过敏", {"allergies": ["尘螨"]}),
        ("我去年退休了", {"occupation": "退休"}),
        ("我是做会计的", {"occupation": "会计"}),
        ("我在昆山开了个小超市", {"location": "昆山", "occupation": "超市老板"}),
        ("我是 Duke 的 grad student", {"school": "Duke", "occupation": "grad student"}),
        ("我朋友读博士，方向是材料", {}),
        ("写一个 story，主角 lives in Paris", {}),
        ("i'm vegeterian and i live in sheffield", {"diet": ["vegetarian"], "location": "sheffield"}),
        ("我在苏州的时候特别喜欢吃面", {}),
        ("我在上海的朋友说那边下雨了", {}),
        ("我在杭州的一家公司上班", {"location": "杭州"}),
        ("我 base 在 Taipei，做 sales", {"location": "Taipei", "occupation": "sales"}),
    ],
)
def test_general_patterns_from_the_widened_table(text: str, expected: dict[str, Any]) -> None:
    assert _profile(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # round 2 (issue #13 §2): guards and values the Chinese rules got wrong, in sentences of their own
        ("我有个同学，在南京做审计，最近很忙", {}),  # "我有个X，…": what follows is about X
        ("群里有个人说他在小米上班", {}),
        ("嘿嘿我闺蜜刚搬去厦门了", {}),
        ("我一个同事对芒果过敏", {}),
        ("我发小在太原当医生", {}),
        ("我那会儿在富士康打工", {}),
        ("我本来是做客服的，后来转成了运营", {"occupation": "运营"}),
        ("我以前不吃葱，现在无所谓了", {}),
        ("我今天不吃肉，想清淡点", {}),
        ("我点了一份清真牛肉面", {}),
        ("我只吃清真食品", {"diet": ["清真"]}),
        ("我大学是在合肥读的", {}),
        ("我在复旦读的本科", {"school": "复旦"}),
        ("我住院了，在等检查结果", {}),
        ("我去广州开会，住两晚", {}),
        ("暑期在字节实习", {}),
        ("我梦见我在伦敦当律师", {}),
        ("模仿我的口吻说：我是一名护士", {}),
        ("这是我表弟的简历：张强，程序员，住在济南", {}),
        ("我家兔子去年走了", {}),
        ("我和男朋友分手了", {}),
        ("我是金牛座", {}),
        ("我是马来人", {}),
        ("我叫不出这个菜的名字", {}),
        ("我是罗总的秘书", {"occupation": "秘书"}),
        ("我是华裔，在美国长大", {"hometown": "美国"}),
        ("我忌口比较多，不吃葱", {"diet": ["不吃葱"]}),
        # values: a workplace is no place, a place begins an organisation's name, etc.
        ("我在京东做算法工程师", {"employer": "京东", "occupation": "算法工程师"}),
        ("我在联想做硬件工程师", {"employer": "联想", "occupation": "硬件工程师"}),
        ("我在中南大学湘雅医院当护士", {"employer": "中南大学湘雅医院", "occupation": "护士"}),
        ("我在中国银行当柜员", {"employer": "中国银行", "occupation": "柜员"}),
        ("我在药企做销售", {"occupation": "销售"}),
        ("我是三甲医院的主治医生", {"occupation": "主治医生"}),
        ("我是一名95后幼儿园老师", {"occupation": "幼儿园老师"}),
        ("我是跑外卖的", {"occupation": "跑外卖"}),
        ("我是老师啊", {"occupation": "老师"}),
        ("我是研二的", {"occupation": "研究生"}),
        ("我现在读大三，学的是法学", {"occupation": "学生", "major": "法学"}),
        ("我在 Meta 做 SWE", {"employer": "Meta", "occupation": "SWE"}),
        ("我在 HKU 读 CS 的 PhD", {"school": "HKU", "major": "CS", "occupation": "phd student"}),
        ("我是 freelance 插画师", {"occupation": "freelance 插画师"}),
        ("I'm 从 Wuhan 来的", {"hometown": "Wuhan"}),
        ("我是土生土长的唐山人", {"hometown": "唐山", "location": "唐山"}),
        ("我是江苏人，毕业后留在了无锡", {"hometown": "江苏", "location": "无锡"}),
        ("我英语和法语都还可以", {"languages": ["英语", "法语"]}),
        ("我和老婆养了只柯基，叫馒头", {"partner": "老婆", "pets": ["柯基: 馒头"]}),
        ("我 wife 是 Nora", {"partner": "wife: Nora"}),
        ("我有个弟弟，还有个姐姐", {"family": ["弟弟", "姐姐"]}),
        ("我有个两岁的儿子", {"children": ["儿子"]}),
        ("我养的狗叫阿黄", {"pets": ["狗: 阿黄"]}),
        ("我有一只猫，叫它花卷", {"pets": ["猫: 花卷"]}),
        ("哈哈哈 我叫陆遥 在贵阳做会计 最近想换工作 能帮我看看简历吗", {"name": "陆遥", "location": "贵阳",
                                                                    "occupation": "会计"}),
        # English: ordinary ways of saying a job
        ("I run a small flower shop in Leeds", {"occupation": "shop owner", "location": "Leeds"}),
        ("I manage a restaurant", {"occupation": "restaurant manager"}),
        ("I work at a school as a janitor", {"occupation": "janitor"}),
        ("I've worked as a welder for 15 years", {"occupation": "welder"}),
        ("As a nurse, I work a lot of weekends", {"occupation": "nurse"}),
        ("I'm in law school", {"occupation": "law student"}),
        ("Job: bank teller", {"occupation": "bank teller"}),
        ("currently a sophomore at Baylor", {"occupation": "student", "school": "Baylor"}),
        ("As a kid, I lived in Rome", {}),
        ("As a teacher, what should I read this summer?", {}),
        ("作为一个程序员，我该学什么语言？", {}),
        ("作为一名护士，我经常上夜班", {"occupation": "护士"}),
        ("my friend works at a hospital as a nurse", {}),
    ],
)
def test_round_two_guards_and_values(text: str, expected: dict[str, Any]) -> None:
    assert _profile(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Chinese: people and questions that are not the user
        ("中国人一般几点吃晚饭", {}),
        ("在上海工作的人都很忙", {}),
        ("我有个同学在字节做后端", {}),
        ("我有一个表哥在澳洲当厨师", {}),
        ("我有个姐姐在广州上班", {"family": ["姐姐"]}),
        ("小王是杭州人，在网易上班", {}),
        ("帮我做一桌菜，客人是回族的，不吃猪肉", {}),
        ("给一个素食者推荐几道菜", {}),
        ("公司楼下新开了一家清真牛肉面，味道还行", {}),
        ("我已经不吃素了", {}),
        ("这顿不吃肉了，减肥", {}),
        ("我叫的滴滴到了", {}),
        ("我住在朋友家，过几天就走", {}),
        ("我现在在广州，下周回北京", {}),
        ("我是从知乎过来的", {}),
        ("我是老板的助理，帮他订个机票", {"occupation": "助理"}),
        # Chinese: business districts are places, not employers; 上/学 after a school
        ("我在国贸上班", {"location": "国贸"}),
        ("我在金融街当律师", {"occupation": "律师"}),
        ("我在CBD做销售", {"occupation": "销售"}),
        ("我在 Zoom 上开会", {}),
        ("我在B站学剪辑", {}),
        ("我在北京学画画", {}),
        ("我在华中科技大学学机械", {"school": "华中科技大学", "occupation": "学生", "major": "机械"}),
        ("我在多伦多读会计", {"location": "多伦多", "occupation": "学生", "major": "会计"}),
        # Chinese: values said in passing
        ("我有一只金毛一只拉布拉多", {"pets": ["金毛", "拉布拉多"]}),
        ("家里有一只橘猫和一只布偶", {"pets": ["橘猫", "布偶"]}),
        ("我妈老说我28了还不结婚", {"age": 28}),
        ("我妈说我30岁之前必须结婚", {}),
        ("我妈说我弟都25了还不找工作", {}),
        ("我日语只会一点点", {"languages": ["日语"]}),
        ("我自己开出租车", {"occupation": "开出租车"}),
        ("我开车去机场", {}),
        # English
        ("I'm engaged to Tom", {"partner": "fiance: Tom"}),
        ("I'm engaged in a lawsuit with my landlord", {}),
        ("my sister got engaged to Tom", {}),
        ("I have two dogs, a lab and a husky", {"pets": ["lab", "husky"]}),
        ("I have two kids, a boy and a girl", {"children": ["son", "daughter"]}),
        ("I have two dogs and a cat", {"pets": ["dog", "cat"]}),
        ("I keep two rabbits, Clover and Biscuit", {"pets": ["rabbit: Clover", "rabbit: Biscuit"]}),
        ("vegetarian mom of twins here, we live in Boulder", {"diet": ["vegetarian"], "children": ["child"],
                                                              "location": "Boulder"}),
        ("Vegetarian friend is coming over", {}),
        ("vegan lasagna recipe please", {}),
        ("Work-wise I'm a structural engineer at Arup", {"occupation": "structural engineer", "employer": "Arup"}),
        ("I drive a bus for a living", {"occupation": "bus driver"}),
        ("I drive a truck", {}),
        ("I hate horror movies, keep them off the list", {"dislikes": ["horror movies"]}),
        ("my birthday's on the 14th of February", {"birthday": "02-14"}),
    ],
)
def test_round_three_guards_and_values(text: str, expected: dict[str, Any]) -> None:
    assert _profile(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Chinese: guards (questions without 吗, someone introduced, role-play, talking to someone, a stay)
        ("在杭州上班压力大不大", {}),
        ("养柯基好养不", {}),
        ("有个朋友对猫过敏", {}),
        ("模拟面试：你好，我叫张三，是一名Java工程师", {}),
        ("我跟我老公说了好几次他不吃香菜", {"partner": "老公"}),
        ("我跟他说了实话", {}),
        ("这几天借住在表姐家，在广州", {}),
        ("我住的小区有好多柯基", {}),
        ("我是兽医，在宠物医院上班", {"occupation": "兽医"}),
        # Chinese and code-switched: values
        ("我是自由翻译，接日语的活", {"occupation": "自由翻译"}),
        ("我是退休的护士", {"occupation": "退休护士"}),
        ("我会说英语和一点日语", {"languages": ["英语", "日语"]}),
        ("我在家跟奶奶讲客家话", {"languages": ["客家话"]}),
        ("我的爱好就是打游戏", {"likes": ["打游戏"]}),
        ("我的爱好是逛逛街", {"likes": ["逛街"]}),
        ("我最爱的水果是榴莲", {"likes": ["榴莲"]}),
        ("我是荷兰国籍", {"nationality": "荷兰"}),
        ("上个月刚过完40岁生日", {"age": 40}),
        ("我35了还在租房", {"age": 35}),
        ("我平时烟酒不沾", {"diet": ["不喝酒"]}),
        ("我这边用的是香港时间", {"timezone": "香港时间"}),
        ("我 major 是 finance", {"major": "finance"}),
        ("我有个 older sister 叫 Grace", {"family": ["sister: Grace"]}),
    ],
)
def test_round_five_guards_and_values(text: str, expected: dict[str, Any]) -> None:
    assert _profile(text) == expected
