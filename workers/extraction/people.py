"""People, places, organisations and events of ordinary conversation, by rules.

A candidate is a run of capitalised words in prose; what it is comes from the words
around it and its own last word (the cues below), never from a list of names, and what
no cue classifies is left out. The rules: docs/graph-model.md ("Where entities come
from").
"""

from __future__ import annotations

import re

from turngraph.workers.extraction.references import Hit

__all__ = ["find_everyday_entities", "is_person_name"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = (
    r"[A-Z][a-zà-ÿ]+(?:['\u2019][A-Za-z]+)?|[A-Z]{2,5}|[A-Z]\.|Mc[A-Z][a-z]+|O['\u2019][A-Z][a-z]+"
)
_CANDIDATE = re.compile(
    rf"(?<![\w@#/.$`-])(?:{_WORD})(?:(?:\s+(?:of|the|de|del|da|la|le|&)\s+|\s+|-)(?:{_WORD}))*"
    r"(?![\w/`])"
)
_POSSESSIVE = re.compile(r"['\u2019]s$")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n\"“(]\s*|\s[-\u2013\u2014]\s)$")

_MONTHS = _words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_DAYS = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs fri "
    "sat sun today tonight tomorrow yesterday"
)
_PEOPLES = _words(
    "english spanish french german italian portuguese chinese japanese korean indian "
    "american british canadian mexican brazilian russian arabic hindi dutch greek turkish "
    "thai vietnamese irish scottish african asian european latin catholic christian "
    "muslim jewish hindu buddhist"
)
_HOLIDAYS = _words(
    "christmas easter thanksgiving halloween hanukkah chanukah diwali ramadan eid passover "
    "holi kwanzaa lent advent pentecost ramadhan navratri vesak purim rosh yom "
    "juneteenth oktoberfest mardi"
)
_EVENT_HEADS = _words(
    "day eve festival fest cup bowl games olympics olympic championship championships "
    "open series conference summit expo fair marathon awards gala parade week weekend "
    "tournament concert show carnival derby classic grand prix"
)
_PLACE_HEADS = _words(
    "city town county province street st avenue ave road rd boulevard blvd lane "
    "park beach lake mount mountain mountains mt river island islands bay valley canyon "
    "falls museum airport station square center centre mall cafe café restaurant bar "
    "pub hotel stadium arena garden gardens village coast hills heights forest desert "
    "peninsula harbor harbour pier bridge tower castle palace cathedral temple zoo "
    "aquarium gallery theater theatre district quarter market plaza springs creek "
    "trail national"
)
_PLACE_LEADS = _words("mount mt lake port fort san santa saint st los las el")
_ORG_HEADS = _words(
    "inc llc ltd corp corporation company co university college school academy "
    "institute bank hospital clinic church foundation association society club group "
    "agency department dept fc united labs studios studio airlines airways bureau "
    "council ministry committee network partners press records union federation "
    "league team"
)
_NOT_NAMES = _words(
    "i i'm i've i'd i'll ok okay yes no hey hi hello thanks thank dear lol omg ugh wow "
    "oh ah haha mr mrs ms dr prof sir madam mom dad mum mama papa grandma grandpa "
    "god tv dm pm am ps fyi btw asap diy"
)
_TITLES = re.compile(
    r"^(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sir|Dame|Auntie|Aunt|Uncle|Grandma|Grandpa|Granny|Nana)\.?\s+"
)

# Context cues, matched on the lower-cased text around a candidate.
_PERSON_BEFORE = re.compile(
    r"(?:\b(?:hey|hi|hello|hiya|thanks|thank you|dear|bye|congrats|congratulations|"
    r"happy birthday|morning|night)\s*,?\s*|"
    r"\bmy\s+(?:(?:best|old|new|little|big|older|younger|oldest|youngest)\s+)?"
    r"(?:friend|brother|sister|mom|mother|dad|father|son|daughter|wife|husband|partner|"
    r"boyfriend|girlfriend|fiance|fiancé|fiancée|cousin|aunt|uncle|niece|nephew|"
    r"grandma|grandpa|grandmother|grandfather|boss|manager|coworker|co-worker|colleague|"
    r"roommate|neighbor|neighbour|teacher|coach|doctor|therapist|landlord|kid|baby|"
    r"bestie|buddy|mentor|classmate|stepmom|stepdad|stepson|stepdaughter)s?\s+|"
    r"\b(?:tell|told|ask|asked|met|meet|meeting|call|called|text|texted|invite|invited|"
    r"visit|visiting|visited|thank|hug|miss|love|loves|loved|married|marry|dating|date|"
    r"saw|see|seeing|introduce|introduced|with)\s+)$"
)
_PERSONAL_THINGS = re.compile(
    r"\s+(?:birthday|graduation|wedding|flight|band|place|house|home|party|mom|dad|"
    r"mother|father|sister|brother|wife|husband|kids?|son|daughter|family|job|new|car|"
    r"dog|cat|baby|room|office|recital|game|show|shower|funeral|surgery|phone|number|"
    r"idea|plan|boyfriend|girlfriend|partner|friend|friends|apartment)\b"
)
_PERSON_DOES = re.compile(
    r"^\s+(?:and\s+(?:i|me)|said|told|tells|thinks|thought|wants|wanted|asked|asks|"
    r"recommended|suggested|invited|texted|mentioned|promised|agreed|insisted|"
    r"(?:keeps|kept)\s+(?:telling|saying|asking|texting|calling)|"
    r"from\s+(?:accounting|work|hr|sales|marketing|school|church|class|the office|"
    r"next door|my team))\b"
)
"""After a name, what people do: enough even for a sentence's first word ("Ana said")."""
_PERSON_IS = re.compile(
    r"^\s+(?:got|gets|is|was|has|had|just|finally|loves|loved|likes|liked|called|"
    r"keeps|kept|went|came|made|bought|started|moved|turns|turned|won|lost|left|joined)\b"
)
"""Weaker: enough in the middle of a sentence, not for its first word ("Rollout is")."""
_VOCATIVE = re.compile(r"^\s*[!?,](?:\s|$)")
_VOCATIVE_BEFORE = re.compile(r"(?:,|\byou and)\s*$")
_MOTION_BEFORE = re.compile(
    r"\b(?:been|go|goes|going|gone|went|fly|flying|flew|flown|flight|fly|drive|driving|drove|"
    r"move|moved|moving|travel|travelling|traveling|traveled|travelled|trip|vacation|"
    r"holiday|visit|visiting|visited|back|return|returned|returning|arrive|arrived|"
    r"land|lands|landed|live|lives|lived|living|based|born|raised|stay|staying|stayed|"
    r"hike|hiked|hiking|road|train|bus|ferry|cruise|tour|honeymoon|relocate|relocated|"
    r"head|heading|headed|walk|walked|run|ran|swim|swam|weekend|week|day|days|night|"
    r"nights|weeks|month|months|summer|winter|spring|fall|autumn|here|there|book|"
    r"history|restaurant|café|cafe|bar|apartment|house|place|conference|concert|"
    r"wedding|festival)\b[^.!?\n]{0,40}?\b(?:to|in|from|at|around|near|through|of)\s+"
    r"(?:the\s+)?$"
)
_ORG_BEFORE = re.compile(
    r"\b(?:job|work|works|worked|working|intern|internship|interned|hired|employed|"
    r"career|position|role|offer|interview|interviewing|study|studies|studying|studied|"
    r"program|degree|major|student|professor|volunteer|volunteering|volunteered|"
    r"promoted|promotion|team lead|manager|engineer|lead|shift|joined|join|joining|"
    r"apply|applied|applying|accepted|admitted|enrolled|graduated|graduation|folks|"
    r"people|someone|guys)\b[^.!?\n]{0,40}?\b(?:at|for|to|with|from|by|of)\s+(?:the\s+)?$"
)
_ORG_AFTER = re.compile(
    r"^\s+(?:is hiring|hired|laid off|kept charging|charges|charged|announced|"
    r"released|stock|shares|headquarters|hq|app|store|account|card)\b"
)
_SHOP_BEFORE = re.compile(r"\b(?:shopping at|bought (?:it |them |this )?at|switched to)\s+$")
_TITLE_BEFORE = re.compile(r"\b(?:dr|mr|mrs|ms|mx|prof)\.?\s+$")
_NAMED_BEFORE = re.compile(
    r"\b(\w+)\s+(?:(?:in|on|at|near|by)\s+\S+(?:\s+\S+)?\s+)?(?:called|named)\s+$"
)
_IN_BEFORE = re.compile(r"\b(?:in|near|around)\s+(?:the\s+)?$")
_PET_NAMED = re.compile(r"\b(?:named|called|name)\s+(?:him|her|it|them)\s+$")
_COORDINATED = re.compile(r"\s*(?:,\s*|,?\s*(?:and|or|&)\s+)")
_NAMED_PLACE = _words(
    "café cafe restaurant bar pub place hotel shop store bakery town village city island "
    "beach park spot venue club neighborhood neighbourhood street lake trail"
)
_NAMED_ORG = _words("company startup firm band team school app brand agency charity")
_NOT_A_PERSON_NAMED = _words("him her it them dog cat puppy kitten")


def _key(word: str) -> str:
    return _POSSESSIVE.sub("", word).lower().rstrip(".")


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Leading "The" and ordinary sentence-start words, trailing possessive 's, out."""
    name = text[start:end]
    while True:
        first, _, rest = name.partition(" ")
        if not rest or _key(first) not in ("the", "a", "an", "and", "of", "de", "&"):
            break
        start += len(first) + 1
        name = rest
    return start, end


def _is_ordinary_start(word: str) -> bool:
    """A sentence's first word that is more likely an ordinary word than a name: short
    function words and words whose lower-case form is usual English."""
    key = _key(word)
    return key in _COMMON_STARTS or len(key) <= 2


# Words that start sentences (function words, pronouns, common verbs, fillers): a
# capitalised first word among these is not a name. General English, not tuned on data.
_COMMON_STARTS = _words(
    """the a an and but or so if when while because since after before then also just
    my your his her our their its this that these those there here what which who whom
    whose why how where we you he she they it me us them i i'm i've i'll i'd im ive
    is are was were be been being am do does did done have has had having will would
    can could should shall may might must not no yes yeah yep nope ok okay sure well
    oh ah wow lol omg ugh hmm haha hey hi hello thanks thank please sorry congrats
    congratulations good great nice cool awesome amazing honestly actually really
    maybe probably definitely totally literally basically anyway anyways btw also
    still even only almost already never always sometimes often usually today
    tonight tomorrow yesterday now later soon last next first second finally
    let let's lets make made get got go went going come came take took see saw look
    looks looked tell told ask asked say said think thought know knew want wanted need
    needed try tried keep kept find found give gave feel felt love loved like liked
    hope hoped wish stayed stay spent spend watched watch started start ran run
    hiked hike had visited visit flew fly moved move went read reading working work
    did didn't don't doesn't isn't wasn't can't won't couldn't wouldn't shouldn't
    it's that's there's here's what's who's how's where's he's she's we're you're
    they're we've you've they've we'll you'll they'll some any all every each both
    many much more most few several one two three four five lots lot with without
    for from to in on at by about of as into over under between through during
    same other another such own either neither whatever whoever anyone someone
    everyone nobody something anything everything nothing yours mine ours"""
)


def find_everyday_entities(text: str, code: bytearray) -> list[Hit]:
    """People, places, organisations and events named in prose (not in ``code`` spans)."""
    hits: list[Hit] = []
    lower = text.lower()
    for match in _CANDIDATE.finditer(text):
        start, end = match.span()
        if 1 in code[start:end]:
            continue
        at_start = _SENTENCE_START.search(text, max(0, start - 4), start) is not None or start == 0
        words = text[start:end].split()
        if at_start and _is_ordinary_start(words[0]):
            start += len(words[0])
            rest = text[start:end].lstrip()
            if not rest or not rest[0].isupper():
                continue
            start = end - len(rest)
            at_start = False  # the rest is a candidate of its own, mid-sentence now
        start, end = _trim(text, start, end)
        hit = _classify(text, lower, start, end, at_start)
        if hits and _COORDINATED.fullmatch(text[hits[-1].end : start]):
            # "Oslo and Bergen", "Lena and Tariq": a list shares the first one's type
            name = (
                text[start:end]
                if hits[-1].type != "Person"
                else _POSSESSIVE.sub("", text[start:end])
            )
            hit = Hit(start, end, hits[-1].type, name)
        if hit is not None:
            hits.append(hit)
    return hits


def _classify(text: str, lower: str, start: int, end: int, at_start: bool) -> Hit | None:
    raw = text[start:end]
    possessive = _POSSESSIVE.search(raw) is not None
    name = _POSSESSIVE.sub("", raw).rstrip(".")
    words = name.split()
    if not words:
        return None
    keys = [_key(w) for w in words]
    if all(k in _MONTHS or k in _DAYS or k in _PEOPLES or k in _NOT_NAMES for k in keys):
        return None
    before = lower[max(0, start - 60) : start]
    after = lower[end : end + 40]
    if keys[0] in _HOLIDAYS or (keys[-1] in _EVENT_HEADS and len(words) > 1):
        return Hit(start, end, "Event", name)
    if keys[-1] in _ORG_HEADS and len(words) > 1:
        return Hit(start, end, "Organization", name)
    if (keys[-1] in _PLACE_HEADS or keys[0] in _PLACE_LEADS) and len(words) > 1:
        return Hit(start, end, "Place", name)
    titled = _TITLES.match(name)
    if titled:
        rest = name[titled.end() :]
        return Hit(start, end, "Person", rest) if rest else None
    if any(k in _MONTHS or k in _DAYS or k in _PEOPLES for k in keys):
        return None
    if len(keys) == 1 and keys[0] in _NOT_NAMES:
        return None
    if possessive and _PERSONAL_THINGS.match(after):
        return Hit(start, end, "Person", name)  # "Pavel's birthday", "Rosa's place"
    if _PET_NAMED.search(before):
        return None
    named = _NAMED_BEFORE.search(before)
    if named is not None:  # "a café called X", "a startup named X", "named him X" (a pet)
        noun = named.group(1)
        if noun in _NAMED_PLACE:
            return Hit(start, end, "Place", raw)
        if noun in _NAMED_ORG:
            return Hit(start, end, "Organization", raw)
        if noun in _NOT_A_PERSON_NAMED:
            return None
    if _TITLE_BEFORE.search(before):
        return Hit(start, end, "Person", name)
    if _ORG_BEFORE.search(before) or _ORG_AFTER.search(after) or _SHOP_BEFORE.search(before):
        return Hit(start, end, "Organization", raw)
    if (_MOTION_BEFORE.search(before) or _IN_BEFORE.search(before)) and not name.isupper():
        return Hit(start, end, "Place", raw)
    if name.isupper():
        return None  # an acronym (UTC, PR, WAL) is no one's name
    if (
        possessive
        or _PERSON_BEFORE.search(before)
        or _PERSON_DOES.match(after)
        or (not at_start and _PERSON_IS.match(after))
        or (_VOCATIVE.match(after) and _VOCATIVE_BEFORE.search(before))
    ):
        return Hit(start, end, "Person", name)
    if len(words) == 2 and all(w[0].isupper() and w[1:].islower() for w in words):
        return Hit(start, end, "Person", name)  # "Taylor Swift": a first and a last name
    return None


_ROLE_WORDS = _words("user assistant system tool bot ai me you human model agent")
_NAME = re.compile(r"[^\W\d_][\w.'\u2019-]*(?:\s+[^\W\d_][\w.'\u2019-]*){0,3}")


def is_person_name(speaker: str) -> bool:
    """A turn's speaker that names someone ("Emma", "jun park"), not a role ("assistant")."""
    speaker = speaker.strip()
    return (
        0 < len(speaker) <= 60
        and _NAME.fullmatch(speaker) is not None
        and speaker.lower() not in _ROLE_WORDS
    )
