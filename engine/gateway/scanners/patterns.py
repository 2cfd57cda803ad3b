"""Instruction patterns: text that tries to give the model orders instead of informing it.

A small table of named rules (English and Chinese), each a compiled regex with a weight per channel
and a one-line description. A bare list of regexes misses most injections from unseen sources
because attackers rephrase, space out or disguise the words, so:

- the text is first normalised into a copy used only for matching: NFKC, zero-width and format
  characters removed, ASCII hidden in Unicode tag characters decoded and appended, look-alike letters
  in mixed-script words mapped to Latin, whitespace collapsed, spaced-out letters ("i g n o r e",
  "I.g.n.o.r.e") joined, leetspeak digits inside words ("ign0re") mapped to letters, lower-cased;
- rules are written around families of phrasings (any verb of overriding + any qualifier + any noun
  for instructions), not single sentences, and a space in a rule also matches no space, so the joined
  letters of "i g n o r e a l l p r e v i o u s" still match.

In the USER channel the operator's own imperatives are normal: rules that are only suspicious inside
data (output hijack, hidden actions, directives about "your answer", role lines) weigh less there.
The score combines the weights of the rules that matched as 1 - prod(1 - w); each rule counts once.

Speed: each English rule names trigger words that any match must contain; a rule's regex runs only in
small windows around those words, so ordinary text costs little more than one pass over its words.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from .base import Channel, Finding
from .invisible import decode_tags, map_lookalikes, printable


def _compile(source: str, cased: bool) -> re.Pattern[str]:
    """A literal space in a rule means "an optional whitespace character" (outside [...] classes), so
    rules also match text whose spaced-out letters were joined into one run ("ignoreallprevious")."""
    # A word in a gap between cues is at most 40 characters: with the spaces optional, an unbounded [\w-]+ can
    # split one long run of letters in quadratically many ways (36 KB of "i g n o r e" took 40 s).
    source = source.replace(r"[\w-]+ ", r"[\w-]{1,40} ").replace(r"[\w'-]+ ", r"[\w'-]{1,40} ")
    out: list[str] = []
    in_class = escaped = False
    for ch in source:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif in_class:
            out.append(ch)
            in_class = ch != "]"
        elif ch == "[":
            out.append(ch)
            in_class = True
        elif ch == " ":
            out.append(r"\s?")
        else:
            out.append(ch)
    return re.compile("".join(out), re.MULTILINE | (re.IGNORECASE if cased else 0))


@dataclass(frozen=True)
class Rule:
    name: str                   # "family/variant"
    source: str                 # the pattern as written; compiled on first use (see `pattern`)
    weight: float               # in the DATA channel
    user_weight: float          # in the USER channel (the operator's own words)
    description: str
    words: frozenset[str] = frozenset()   # every match contains one of these whole (lower-case ASCII) words
    needles: tuple[str, ...] = ()         # or, for rules without words: one of these substrings
    reach: tuple[int, int] = (60, 300)    # how far a match extends before and after its trigger word
    cased: bool = False                   # runs on the original-case copy (the pattern says where case matters)

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled when first needed: all the rules take about 160 ms to compile, which must be paid neither at
        import (the console's window waits on the imports) nor on the UI thread (scans run on workers)."""
        return _compile(self.source, self.cased)

    @property
    def family(self) -> str:
        return self.name.split("/", 1)[0]

    def weight_in(self, channel: Channel) -> float:
        return self.user_weight if channel == Channel.USER else self.weight


def _rule(name: str, source: str, weight: float, user_weight: float, description: str, *,
          words: str = "", needles: tuple[str, ...] = (), reach: tuple[int, int] = (60, 300),
          cased: bool = False) -> Rule:
    return Rule(name, source, weight, user_weight, description, frozenset(words.split()),
                needles, reach, cased)


# --- vocabulary shared by several rules (patterns are lower-case: they run on a lower-cased copy) --

_OVERRIDE_VERB = (r"(?:ignore|disregard|forget|neglect|overlook|set aside|put aside|pay no (?:attention|heed) to|"
                  r"do not (?:follow|obey|heed)|don'?t (?:follow|obey|heed)|stop following|no longer (?:follow|obey)|"
                  r"override)")
_FILLER = (r"(?:(?:all|any|every|each|of|the|your|my|our|these|those|this|that|and|other|such|whatever|you|"
           r"have|been|were|was|are|received|given|got|told|so|far|just|now|entire|whole) ){0,5}")
_QUALIFIER = (r"(?:previous(?:ly)?|prior|above|preceding|earlier|former|initial|original|old|foregoing|"
              r"aforementioned|above-mentioned|before|system|developer|"
              r"safety|openai|all|any|every)")
_INSTRUCTION_NOUN = (r"(?:instructions?|prompts?|rules?|directions?|directives?|guidelines?|guidance|context|"
                     r"commands?|orders|constraints|programming|tasks?|restrictions|limitations|polic(?:y|ies)|"
                     r"messages|text|content|input)")
_SENSITIVE = (r"(?:conversation|chat (?:history|logs?|transcripts?)|(?:entire |whole |full )?(?:context|transcript|"
              r"history)|passwords?|passcodes?|credentials?|api[ _-]?keys?|secrets?|secret keys?|"
              r"(?:access |auth |session |bearer )?tokens?|private keys?|system prompt|cookies?|"
              r"(?:all|user'?s?|users'|customer'?s?|personal|private|sensitive|confidential|internal) "
              r"(?:data|information|info|messages|emails|records|files|details|list)|customer (?:list|data|records)|"
              r"credit card (?:numbers?|details)|social security numbers?)")
_DESTINATION = (r"(?:https?://|www\.|\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|ru|cn|xyz|info|biz|co|me|site|top|"
                r"app|dev|tk|cc)\b|[\w.+-]+@[\w-]+\.[\w.-]+|\b(?:this|that|the following|my|our|an?|the attacker'?s?|"
                r"external|remote|specified|given) (?:address|url|link|server|endpoint|e-?mail|inbox|site|"
                r"website|domain|ip))")
_SENSITIVE_ZH = (r"(?:对话|聊天记录|上下文|密码|密钥|秘钥|api ?key|令牌|凭证|凭据|用户资料|用户数据|用户信息|个人信息|"
                 r"客户名单|客户列表|客户数据|客户资料|系统提示|隐私数据|隐私信息|cookie|全部数据|所有数据)")
_SEND_ZH = r"(?:发送|发给|转发|上传|提交|邮寄|传送|传给|发到|泄露|同步|复制)"
# what the reader (the model) writes; not "output" (docs say "your output" often), and "reply"/"message" are
# weaker because an e-mail to a person asks for them too ("include your order number in your reply")
_REPLY_NOUN = r"(?:response|answer|completion)s?"
_REPLY_NOUN_SOFT = r"(?:reply|replies|message|messages)"
# verbs that transform a reply (nobody asks a person to do this to the e-mail they send back) ...
_REPLY_VERB_STRONG = (r"(?:modify|change|alter|edit|rewrite|rephrase|translate|convert|format|structure|style|enhance|"
                      r"augment|enrich|improve|supplement|embellish|adjust|replace|substitute|swap|introduce|encode|"
                      r"encrypt|reverse|flip|scramble|group|split|capitali[sz]e|spell|promote|advertise|embed|"
                      r"incorporate|integrate|weave|sprinkle|render|anagram|misspell|rearrange|shorten|expand|"
                      r"obfuscate|alternate|uppercase|lowercase|rhyme|prefix|suffix|shift|insert|append|prepend|"
                      r"redirect|hide)")
# ... and every verb that can direct a reply, including the everyday ones ("include", "add", "provide")
_REPLY_VERB = (rf"(?:{_REPLY_VERB_STRONG[3:-1]}|add|include|attach|provide|give|write|compose|end|begin|start|close|"
               r"finish|conclude|update|ensure|make|use|mention|reference|cite|suggest|recommend|encourage|urge|"
               r"express|list|display|refer|sort|order|number|keep|limit|repeat|sign|mark|wrap|highlight|bold|put|"
               r"place|omit|remove|delete|avoid|exclude|precede|respond|reply|answer|tag|label|link|direct|invite|ask|"
               r"tell|remind|inform|advise|warn|present|deliver)")
_CLAUSE_START = (r"(?:^|[.!?:;\n)\]\"'“”]\s?|\b(?:please|kindly|also|and|then|now|must|should|can you|could you|"
                 r"would you|you should|you must|be sure to|make sure to|remember to|don'?t forget to|"
                 r"do not forget to|try to|ensure to|consider)\s)")
_YOU_CONTEXT = (r"(?:^|[.,!?:;\n\"“]\s?|\b(?:you (?:will|must|should|shall|are to|have to|need to|can|now|to)|"
                r"i want you to|i need you to|please|now|from now on,?|henceforth,?|going forward,?)\s)")

RULES: tuple[Rule, ...] = (
    # --- override: discard what came before ---
    _rule("override/ignore-previous",
          rf"\b{_OVERRIDE_VERB} {_FILLER}{_QUALIFIER} {_FILLER}{_INSTRUCTION_NOUN}\b"
          rf"|\b{_OVERRIDE_VERB} {_FILLER}{_INSTRUCTION_NOUN} (?:above|before|previously|so far|given (?:above|before|"
          r"earlier)|you (?:were|have been|received|got))\b"
          r"|\b(?:ignore|disregard|forget) (?:everything|all|anything|what(?:ever)? (?:was|is|you were|i) ?"
          r"(?:said|written|told|stated|mentioned)?) ?(?:above|before|prior|previously|so far|until now|up to now)\b"
          r"|\b(?:ignore|disregard) the above\b",
          0.85, 0.75, "tells the reader to ignore or forget earlier instructions, rules or context",
          words="ignore disregard forget neglect overlook aside attention heed follow following obey override",
          reach=(30, 250)),
    _rule("override/zh-ignore-previous",
          r"(?:忽略|无视|忽视|忘记|忘掉|不要理会|不要理睬|别管|不要管|不再遵守|不要遵守|不必遵守|"
          r"不用遵守|不要遵循|不再遵循|停止遵守|停止遵循)(?:掉)?(?:你)?(?:之前|以上|上面|上述|前面|先前|此前|早先|"
          r"原来|原有|原先|所有|全部|一切|刚才|系统|前述|上文|之前所有)(?:的)?(?:所有|全部|一切|任何)?(?:的)?"
          r"(?:指令|指示|说明|规则|提示|提示词|要求|设定|命令|约束|限制|任务|对话|上下文)"
          r"|(?:忽略|无视|忘记|忘掉)(?:掉)?(?:之前|以上|上面|上述|前面|先前|此前|上文)(?:的)?(?:一切|所有|全部)",
          0.85, 0.75, "tells the reader to ignore earlier instructions (Chinese)",
          needles=("忽", "无视", "忘", "理会", "理睬", "别管", "不要管", "遵")),
    _rule("override/new-instructions",
          r"(?:^|[\s\[(#*>])(?:new|updated|revised|real|actual|true|override|secret|hidden|additional) (?:system )?"
          r"(?:instructions?|task|rules|directives?|orders|prompt|objective)\s?[:：]"
          r"|\[ ?(?:new|updated) (?:section|instructions?|task|rules) ?\]",
          0.45, 0.45, "announces a new set of instructions to replace the current ones",
          words="instruction instructions task rules directive directives orders prompt objective section",
          reach=(40, 10)),
    _rule("override/zh-new-instructions",
          r"(?:新的?|真正的?|实际的?|更新的?|隐藏的?)(?:系统)?(?:指令|指示|任务|规则|要求|提示)\s?[:：]",
          0.45, 0.45, "announces new instructions (Chinese)", needles=("指令", "指示", "任务", "规则", "要求", "提示")),

    # --- role reassignment ---
    _rule("role/you-are-now",
          r"\byou(?: are|'re| r) now (?:(?:a|an|the|my|our) (?:[\w-]+ ){0,3}?(?:ai|assistant|bot|chatbot|model|"
          r"character|persona|person|hacker|admin(?:istrator)?|expert|version|entity|system|program|machine|being|"
          r"god|girl|boy|man|woman|friend|partner|narrator|simulator|terminal|console|interpreter|translator|writer|"
          r"author|agent|jailbreak)\b|(?:no longer|free|unrestricted|jailbroken|unchained|unleashed|liberated|"
          r"uncensored|unfiltered|in (?:[\w-]+ ){0,2}mode|going to (?:act|pretend|play|be)|called|named|known as|"
          r"acting as|playing)\b|(?-i:[A-Z][A-Za-z0-9-]*[A-Z]))"
          r"|\byou(?: are|'re) no longer (?:an? )?(?:chatgpt|gpt|an ai|ai|assistant|claude|bard|llama|bound|"
          r"restricted|limited|required|(?:a )?language model)\b",
          0.6, 0.55, "tells the reader it is now someone else (\"you are now ...\", \"you are no longer ...\")",
          words="now longer", reach=(15, 90), cased=True),
    _rule("role/act-as",
          rf"{_YOU_CONTEXT}(?:act|behave|roleplay|role-play|role play) (?:as|like) (?!soon|quickly|well|follows|needed|"
          r"usual|possible|such|before|necessary|normal|expected|intended|described|required)"
          rf"|{_YOU_CONTEXT}pretend (?:to be|(?:that )?you(?:'re| are| were)|you have)\b"
          r"|\byou (?:will|must|shall|are going to|should|are to) (?:now |always |only )?(?:respond|answer|reply|act|"
          r"behave|speak|talk|write|roleplay)(?: to| in)? (?:[\w'-]+ ){0,5}?as "
          r"(?!soon|quickly|well|follows|needed|usual|"
          r"possible|such|before|necessary|normal|expected|intended|described|required|much|many|long|often|far|if|"
          r"though|a result|part|per|of|an? (?:reminder|example|result))"
          r"|\b(?:simulate|emulate|become|be) (?:a|an|the)? ?(?:[\w-]+ ){0,3}?"
          r"(?:chatbot|ai|bot|assistant|model|persona) "
          r"(?:named|called|known as)\b"
          r"|\b(?:assume|adopt|take on|take up|immerse yourself (?:in|into)|step into|embody|(?:are|be) in) (?:the )?"
          r"(?:role|persona|identity|character|personality) of\b",
          0.45, 0.3, "asks the reader to act as, pretend to be or take on the role of someone",
          words="act behave roleplay role play pretend assume adopt take immerse step embody respond answer reply "
                "speak talk write persona chatbot ai bot assistant model",
          reach=(60, 70)),
    _rule("role/from-now-on",
          r"\b(?:from now on|from this (?:point|moment) (?:on|forward)|henceforth|for the rest of (?:this|the) "
          r"conversation)\b,? (?:you|your|u|act|respond|answer|reply|always|only|never|pretend|behave|speak|talk|"
          r"write)\b",
          0.4, 0.4, "changes how the reader behaves from now on", words="now henceforth point moment rest",
          reach=(40, 60)),
    _rule("role/zh-role",
          r"你现在是|你现在(?:扮演|作为)|从现在(?:开始|起)[,，]? ?(?:你|您)|(?:请|你|您)(?:现在)?(?:来)?扮演|"
          r"假装(?:你是|自己是|成为?)|角色扮演|你的新(?:身份|角色|名字)|你不再是",
          0.55, 0.45, "reassigns the reader's role (\"你现在是\", \"扮演\")",
          needles=("你现在", "从现在", "扮演", "假装", "你的新", "你不再")),

    # --- jailbreak personas and rule removal ---
    _rule("jailbreak/persona",
          r"(?-i:\bDAN\b|\bSTAN\b|\bDUDE\b)|\b(?:developer mode|dev mode|god mode|jailbreak|jailbroken|jail-broken|"
          r"do anything now|evil (?:confidant|mode|ai|twin|assistant)|unrestricted mode|no-?filter mode|"
          r"opposite mode|betterdan|antigpt|anti-gpt)\b",
          0.75, 0.75, "names a known jailbreak persona or mode (DAN, developer mode, ...)",
          words="dan stan dude mode jailbreak jailbroken jail anything evil betterdan antigpt anti",
          reach=(30, 30), cased=True),
    _rule("jailbreak/no-rules",
          r"\b(?:not|no longer|never) (?:be )?(?:bound|restricted|limited|constrained|governed|held back) by\b"
          r"|\b(?:free|freed|liberated|broken free|break free) (?:from|of) (?:[\w-]+ ){0,3}(?:rules|restrictions|"
          r"limitations|guidelines|confines|filters|policies|censorship)\b"
          r"|\b(?:no|zero|without|(?:not|never|doesn't|does not|don't|do not) (?:have|has)) (?:any )?(?:ethical|moral|"
          r"content|safety)(?: (?:or|and|,) (?:ethical|moral|legal|content|safety))? (?:guidelines|restrictions|"
          r"limitations|filters?|boundaries|principles|constraints|policies|compass|code)\b"
          r"|\bwithout (?:any )?(?:regard|consideration|concern|care|thought) (?:for|to|of|about) (?:[\w-]+ ){0,2}"
          r"(?:ethics|morals|morality|legality|laws?|rules|safety|consequences|policies|guidelines)\b"
          r"|\b(?:never|doesn't|does not|don't|do not|won't|will not) (?:care|cares|give a [\w*]+) about "
          r"(?:[\w-]+ ){0,2}"
          r"(?:ethic|moral|legal|illegal|rules|laws|consequences|guidelines|polic)"
          r"|\b(?:not|never) (?:be )?(?:restrained|censored|filtered) by\b|\bunrestrained\b"
          r"|\b(?:bypass|circumvent|evade|disable|turn off|ignore|override) (?:[\w-]+ ){0,2}(?:content )?"
          r"(?:filters?|safeguards|guardrails|censorship|moderation|content polic(?:y|ies)|ethical guidelines)\b"
          r"|\b(?:you|it|(?-i:[A-Z]{2,})) (?:do not|don't|does not|doesn't|will not|won't|never|no longer|can't|"
          r"cannot) (?:have to |need to )?(?:follow|abide by|adhere to|obey|comply with|care about|respect) "
          r"(?:[\w-]+ ){0,3}(?:rules|guidelines|polic(?:y|ies)|ethics|morals|laws|restrictions)\b",
          0.45, 0.5, "claims the reader is free of its rules, filters or ethics",
          words="bound restricted limited constrained governed held free freed liberated broken break ethical moral "
                "content safety bypass circumvent evade disable turn ignore override follow abide adhere obey "
                "comply care cares respect regard consideration concern thought give restrained censored filtered "
                "unrestrained",
          reach=(45, 90), cased=True),
    _rule("jailbreak/lexicon",
          r"\b(?:amoral|unfiltered|uncensored|stay in character|break(?:ing)? character|content polic(?:y|ies)|"
          r"openai(?:'s)? (?:polic(?:y|ies)|guidelines|rules|content)|as an ai language model|chatgpt)\b",
          0.25, 0.3, "uses the vocabulary of jailbreak prompts (content policy, stay in character, ...)",
          words="amoral unfiltered uncensored character policy policies openai model chatgpt", reach=(30, 30)),
    _rule("jailbreak/dual-response",
          r"\b(?:respond|answer|reply|responses?|answers?)\b[^\n.]{0,40}?\b(?:in )?(?:two|2) (?:different |separate |"
          r"distinct )?(?:ways|responses|personalities|personas|manners|answers|forms|modes|versions)\b"
          r"|\b(?:two|2) (?:different |separate |distinct )?(?:responses|answers|personalities|personas)\b"
          r"[^\n.]{0,60}?\b(?:one|first)\b[^\n.]{0,60}?\b(?:normal|default|standard|filtered|classic)\b",
          0.45, 0.45, "asks for two answers, a normal one and an unrestricted one (a jailbreak format)",
          words="two responses answers personalities personas ways manners forms modes versions", reach=(110, 140)),
    _rule("jailbreak/zh",
          r"越狱|开发者模式|不受(?:任何)?(?:限制|约束|规则)|没有(?:任何)?(?:限制|道德|伦理|审查|过滤)|"
          r"(?:绕过|规避|突破|解除)\S{0,6}(?:限制|过滤|审查|安全|规则)|无视(?:道德|伦理|法律)",
          0.55, 0.55, "jailbreak wording (Chinese): no limits, developer mode, bypass filters",
          needles=("越狱", "开发者模式", "不受", "没有", "绕过", "规避", "突破", "解除", "无视")),

    # --- fake system or tool tags ---
    _rule("tag/chat-template",
          r"<\|\s?(?:im_start|im_end|im_sep|system|user|assistant|endoftext|start_header_id|end_header_id|eot_id|"
          r"begin_of_text)\s?\|>",
          0.85, 0.7, "contains chat-template control tokens (<|im_start|>system, ...)", needles=("<|",)),
    _rule("tag/system-tag",
          r"<\s?/?\s?(?:system|sys|system[_-]?prompt|instructions?|admin|developer|override|assistant)\s?>"
          r"|<<\s?/?\s?sys\s?>>",
          0.8, 0.6, "contains a fake <system> or <instructions> tag", needles=("<",)),
    _rule("tag/bracket",
          r"\[\s?/?\s?(?:system|sys|inst|instructions?|admin|developer|system (?:message|prompt|note|override)|"
          r"assistant)\s?\]",
          0.75, 0.55, "contains a fake [SYSTEM] or [INST] marker", needles=("[",)),
    _rule("tag/heading",
          r"^\s?#{1,6}\s?(?:system|instructions?|new instructions?|system (?:prompt|message|override|note)|admin|"
          r"assistant|developer)\s?:?\s?$",
          0.6, 0.4, "contains a fake '### system' heading", needles=("#",)),
    _rule("tag/role-line",
          r"^\s?(?:system|assistant|ai|chatgpt|gpt|bot|model|developer|admin)\s?:",
          0.45, 0.1, "a line starts with 'system:' or 'assistant:' as if it were a chat turn",
          words="system assistant ai chatgpt gpt bot model developer admin", reach=(2, 3)),
    _rule("tag/zh-tag",
          r"【系统(?:消息|提示|指令)?】|\[系统(?:消息|提示|指令)?\]|^\s?(?:系统|助手|系统提示|系统消息)\s?[:：]",
          0.6, 0.3, "contains a fake system tag or turn (Chinese)", needles=("系统", "助手")),

    # --- exfiltration ---
    _rule("exfil/send-to",
          r"\b(?:send|forward|e-?mail|mail|post|upload|transmit|leak|exfiltrate|submit|share|copy|paste|relay|"
          rf"dump|sync|export|append)\b[^\n]{{0,60}}?\b{_SENSITIVE}\b[^\n]{{0,80}}?\b(?:to|into|at|via|onto|on)\b"
          rf"[^\n]{{0,25}}?{_DESTINATION}",
          0.8, 0.6, "asks to send conversation, secrets or data to an outside address",
          words="send forward email e mail post upload transmit leak exfiltrate submit share copy paste relay dump "
                "sync export append",
          reach=(5, 320)),
    _rule("exfil/markdown-url",
          r"!\[[^\]\n]{0,100}\]\( ?https?://[^)\s]{0,200}(?:\{[^}\s]{1,40}\}|\[[A-Z_]{2,40}\]|<[A-Z_]{2,40}>|"
          r"\$\{?\w+)",
          0.6, 0.5, "a markdown image whose URL is to be filled with data (a silent exfiltration channel)",
          needles=("![",), cased=True),
    _rule("exfil/zh-send-to",
          rf"{_SEND_ZH}[^\n]{{0,30}}?{_SENSITIVE_ZH}[^\n]{{0,30}}?(?:到|至|给)"
          rf"|(?:把|将)[^\n]{{0,20}}?{_SENSITIVE_ZH}[^\n]{{0,20}}?{_SEND_ZH}(?:到|至|给)",
          0.75, 0.6, "asks to send conversation, secrets or data somewhere (Chinese)",
          needles=("发", "转", "上传", "提交", "邮寄", "传", "泄露", "同步", "复制")),

    # --- output hijack (RAG-style: dictate the answer) ---
    _rule("hijack/when-asked",
          r"\b(?:when(?:ever)?|if|once) (?:you(?:'re| are)? |u (?:are )?|the (?:user|human|reader) |someone |anyone |"
          r"people )?(?:is |are |get |gets )?(?:asked|questioned|queried|prompted|asks?|inquires?|wants to know)\b"
          r"[^\n]{0,300}?\b(?:please|kindly|you (?:should|must|will|shall|need to|have to)|always|just|only|simply|"
          r"then)\s(?:[\w-]+\s)?(?:output|answer|respond|reply|say|return|print|write|state|tell)\b",
          0.7, 0.2, "dictates what to output when a certain question is asked",
          words="asked questioned queried prompted ask asks inquire inquires wants", reach=(45, 380)),
    _rule("hijack/answer-must",
          r"\byour (?:final |only |whole |entire )?(?:answer|response|reply|output)s? (?:must|should|has to|needs to|"
          r"shall|will|is to) (?:always |only )?(?:be|contain|include|say|state|read|start|begin|end)\b",
          0.55, 0.15, "prescribes what the reader's answer must be",
          words="answer answers response responses reply replies output outputs", reach=(30, 45)),
    _rule("hijack/respond-only",
          rf"{_CLAUSE_START}(?:(?:respond|reply|answer|output|say|print|write|type)\s(?:only|exactly|just|"
          r"nothing (?:but|else|other than)) (?:with\b|by saying\b|in\b|using\b|"
          r"the (?:word|phrase|text|string|following)\b|[\"“'])"
          r"|(?:print|output|say|repeat|write|type|return) (?:exactly|verbatim)\b"
          r"|(?:only|just|simply) (?:respond|reply|answer|output|say|print|return) (?:with\b|by saying\b|"
          r"the (?:word|phrase|text|string)\b|[\"“']))",
          0.5, 0.15, "restricts the reply to given words (\"respond only with\", \"print exactly\")",
          words="only exactly verbatim nothing just simply", reach=(40, 40)),
    _rule("hijack/do-not-answer",
          r"\b(?:you )?(?:must not|mustn't|do not|don't|should not|shouldn't|never) (?:answer|respond to|address) "
          r"(?:the|this|that|any|their|the user'?s?) (?:question|query|request)",
          0.55, 0.2, "tells the reader not to answer the question it was given", words="answer respond address",
          reach=(20, 40)),
    _rule("hijack/zh",
          r"当(?:你|您)?(?:被)?(?:问到|问及|询问|提问|被问|问起)[^\n]{0,120}?(?:请|就|则|务必)?(?:输出|回答|回复|答复|说)"
          r"|如果(?:用户|有人|别人|你被|您被)(?:问|询问|提问)[^\n]{0,80}?(?:请|就|则)?(?:回答|输出|回复|告诉)"
          r"|你的(?:回答|回复|答案|输出)(?:必须|应该|只能|一定要|务必)"
          r"|(?:只|仅)(?:需|要|能|可以)?(?:回答|输出|回复)[:：“\"]|原样输出|逐字输出|(?:请|务必)直接输出",
          0.65, 0.15, "dictates the answer (Chinese: \"当被问到...请输出\", \"你的回答必须\")",
          needles=("当", "如果", "你的", "只", "仅", "原样", "逐字", "直接输出")),

    # --- hidden actions ---
    _rule("hidden/dont-tell",
          r"\b(?:do not|don't|never|without|must not|mustn't) (?:tell(?:ing)?|inform(?:ing)?|notify(?:ing)?|"
          r"alert(?:ing)?|warn(?:ing)?|let(?:ting)?|reveal(?:ing)? (?:this |it |that )?to|disclos(?:e|ing) "
          r"(?:this |it |that )?to|mention(?:ing)? (?:this |it |that )?to) (?:the |your )?(?:user|users|human|operator|"
          r"customer|client|recipient|reader|requester)s?\b",
          0.65, 0.25, "asks to act without telling the user",
          words="tell telling inform informing notify notifying alert alerting warn warning let letting reveal "
                "revealing disclose disclosing mention mentioning",
          reach=(12, 60)),
    _rule("hidden/dont-mention",
          r"\b(?:do not|don't|never|without|must not) (?:mention(?:ing)?|reveal(?:ing)?|disclos(?:e|ing)|"
          r"acknowledg(?:e|ing)|refer(?:ring)? to|explain(?:ing)?|say(?:ing)? anything about) (?:this|these|that|"
          r"the|any|your|my)? ?(?:instructions?|requests?|messages?|notes?|prompt|changes?|steps?|actions?|"
          r"modifications?|task|injection|fact that|source|link)\b"
          r"|\bwithout (?:mentioning|telling|informing|notifying|alerting|revealing|disclosing)\b",
          0.45, 0.15, "asks to keep the instruction or change unmentioned",
          words="mention mentioning reveal revealing disclose disclosing acknowledge acknowledging refer referring "
                "explain explaining say saying telling informing notifying alerting",
          reach=(12, 60)),
    _rule("hidden/covert-action",
          r"\b(?:secretly|silently|covertly|quietly|discreetly|stealthily) (?:send|forward|add|insert|include|email|"
          r"upload|post|change|modify|replace|redirect|execute|run|install|download|delete|transfer|copy)\b",
          0.45, 0.2, "asks to do something secretly",
          words="secretly silently covertly quietly discreetly stealthily", reach=(1, 20)),
    _rule("hidden/zh",
          r"(?:不要|别|切勿|不得|不可|勿)(?:告诉|告知|通知|提醒|透露给)(?:用户|使用者|客户|任何人)"
          r"|(?:不要|别|切勿|不得|勿)(?:向|对|跟|和)(?:用户|使用者|客户)(?:提及|透露|说明|提起|解释|说)"
          r"|(?:不要|别|切勿|不得|勿)(?:提及|透露|提起|说明)(?:这|此|该|本)(?:条|个|段)?(?:指令|请求|消息|提示|要求|操作)"
          r"|对用户保密|(?:悄悄|偷偷|暗中|秘密)地?(?:发送|执行|添加|修改|转发|上传|插入)",
          0.6, 0.25, "asks to act without telling the user (Chinese: \"不要告诉用户\")",
          needles=("不要", "别", "切勿", "不得", "不可", "勿", "保密", "悄悄", "偷偷", "暗中", "秘密")),

    # --- directives about the reader's reply, from inside data ---
    _rule("reply/directive",
          rf"{_CLAUSE_START}{_REPLY_VERB}\b(?:[^\n.!?]|[.!?](?=\S)){{0,100}}?\byour (?:entire |whole |final |next |"
          rf"current )?{_REPLY_NOUN}\b"
          rf"|{_CLAUSE_START}{_REPLY_VERB_STRONG}\b(?:[^\n.!?]|[.!?](?=\S)){{0,100}}?\byour (?:entire |whole |final |"
          rf"next |current )?{_REPLY_NOUN_SOFT}\b"
          r"|\b(?:in|within|throughout|at the (?:end|start|beginning) of) your (?:entire |whole |final |next )?"
          rf"(?:{_REPLY_NOUN},? (?:please |also |be sure to |make sure to |you (?:should|must) )?{_REPLY_VERB}|"
          rf"{_REPLY_NOUN_SOFT},? (?:please |also |be sure to |make sure to |you (?:should|must) )?"
          rf"{_REPLY_VERB_STRONG})"
          r"\b",
          0.55, 0.1, "a sentence in the data instructs how to write or change the reader's response",
          words="your", reach=(150, 80)),
    _rule("reply/directive-soft",
          rf"{_CLAUSE_START}{_REPLY_VERB}\b(?:[^\n.!?]|[.!?](?=\S)){{0,100}}?\byour (?:entire |whole |final |next |"
          rf"current )?{_REPLY_NOUN_SOFT}\b"
          r"|\b(?:in|within|throughout|at the (?:end|start|beginning) of) your (?:entire |whole |final |next )?"
          rf"{_REPLY_NOUN_SOFT},? (?:please |also |be sure to |make sure to |you (?:should|must) )?{_REPLY_VERB}\b",
          0.4, 0.1, "a sentence in the data asks for something in the reader's reply or message",
          words="your", reach=(150, 80)),
    _rule("reply/reference",
          r"\b(?:in|into|within|throughout|at the (?:end|start|beginning) of|before|after) (?:your|each|every|"
          r"all (?:of )?your) (?:entire |whole |final |next )?(?:response|answer|completion)s?\b",
          0.35, 0.05, "the data refers to the reader's own response (\"in your response\")",
          words="your each every", reach=(30, 40)),
    _rule("reply/insert-content",
          r"\b(?:add|include|insert|incorporate|integrate|embed|inject|append|prepend|weave|place|put|use|employ|"
          r"paste|merge|apply|implement|utili[sz]e|feature|featuring|enrich|enhance|augment|validate|ensure|"
          r"consider)\b[^\n.]{0,60}?\b(?:the )?(?:following|below|subsequent) (?:[\w-]+ )?(?:code|snippet|script|"
          r"block|excerpt|segment|fragment|function|lines?|command|payload|link|url|text|sentence|message|"
          r"statement)\b",
          0.4, 0.1, "asks to put the following code or text into the reader's output",
          words="following below subsequent", reach=(80, 40)),
    _rule("reply/zh",
          r"(?:你的|您的)(?:回答|回复|答复|输出)(?:中|里)?(?:必须|要|应该|应)?(?:加入|添加|包含|插入|提及|推荐|提到|翻译|改写|使用)"
          r"|(?:在|于)(?:你的|您的)?(?:回答|回复|答复|输出)(?:中|里|末尾|结尾|开头)(?:加入|添加|包含|插入|提及|推荐|提到|附上)",
          0.55, 0.1, "instructs how to write the reader's response (Chinese)", needles=("回答", "回复", "答复", "输出")),

    # --- prompt leak ---
    _rule("leak/system-prompt",
          r"\b(?:reveal|show|print|output|display|repeat|recite|tell|give|share|dump|leak|list|write|spell|"
          r"translate|summari[sz]e|paraphrase|echo|return|copy|expose|disclose|what (?:is|are|were|was)|what'?s)\b"
          r"[^\n.?!]{0,40}?\b(?:your|the|my|its|those|these) (?:(?:full|entire|exact|complete|original|initial|"
          r"starting|hidden|secret|internal|underlying|first|developer|system|pre-?) ?){1,3}(?:prompt|instructions?|"
          r"message|directives?|initiali[sz]ation)\b"
          r"|\b(?:system_?prompt|sys_prompt|initial prompt|initialization string)\b",
          0.6, 0.6, "asks for the reader's system prompt or hidden instructions",
          words="prompt instruction instructions message directive directives initialization initialisation "
                "systemprompt",
          reach=(120, 15)),
    _rule("leak/text-above",
          r"\b(?:repeat|print|output|show|display|write|copy|reproduce|return|echo|recite)\b (?:back )?(?:all |"
          r"everything |the |all the )?(?:(?:text|words|content|lines|instructions|messages?|prompt|conversation) "
          r"(?:above|before this|preceding|prior to this|so far)|(?:above|preceding|previous|prior|initial|first) "
          r"(?:text|words|content|lines|instructions|messages?|prompt|conversation)|(?:everything )?(?:above|so far|"
          r"before this)(?: verbatim)?(?=\s*(?:[.!?:]|in full|verbatim|word for word|starting|including|\Z)))",
          0.5, 0.5, "asks to repeat the text that came before (the prompt)",
          words="above before preceding previous prior initial first far verbatim", reach=(60, 60)),
    _rule("leak/instructions-talk",
          r"\b(?:what (?:were|are|was) you (?:told|instructed|given|programmed|asked)|"
          r"(?:you were|you've been|you have been|"
          r"were you) (?:told|instructed|given|programmed|configured)\b[^\n.?!]{0,30}?(?:before|at the (?:beginning|"
          r"start)|initially|originally|in your (?:prompt|instructions))|i (?:was|am|have been) (?:instructed|"
          r"programmed) to|(?:my|your) (?:instructions|initial prompt|system prompt|rules) (?:are|were|say|read)\b)"
          r"|\b(?:repeat|recite|print|show|list|output) (?:the |your |all )?(?:instructions|rules|prompt|directives|"
          r"guidelines) (?:you (?:were|have been) given|(?:given|provided) to you|(?:at|from) the (?:beginning|start) "
          r"of (?:this|the|our) (?:conversation|chat|session))",
          0.4, 0.5, "asks what the reader was told or instructed before the conversation (prompt extraction)",
          words="told instructed given programmed configured asked instructions prompt rules", reach=(70, 80)),
    # --- steer the checker: a text that tells whoever reads or checks it what verdict to give (a liar's answer
    # written to its judge). Written from the roles a checker has, not from any judge's prompt.
    _rule("steer/addressed-checker",
          r"\b(?:note|message|instructions?|memo|hint|reminder|notice|attention) (?:to|for) (?:the |any |all )?"
          r"(?:[\w-]+ ){0,2}?(?:verifiers?|judges?|graders?|checkers?|fact-?checkers?|evaluators?|reviewers?|"
          r"assessors?|auditors?|moderators?|classifiers?|validators?|raters?|scorers?)\b"
          r"|(?:^|[.!?;\n(\[\"'“]\s?)(?:dear |hey |hi |attention,? )?(?:ai |llm |automated |model )?(?:verifier|judge|grader|"
          r"checker|fact-?checker|evaluator|reviewer|assessor|auditor|moderator|classifier|validator|rater|scorer)s?"
          r"\s?[:,]"
          r"|\b(?:whoever|anyone|any (?:ai|model|system)|the (?:ai|model|system|llm)) (?:who |that |which )?(?:is )?"
          r"(?:reads?|reading|checks?|checking|verif(?:y|ies|ying)|grades?|grading|evaluates?|evaluating|judges?|"
          r"judging|reviews?|reviewing|scores?|scoring) (?:this|these|the (?:answer|response|claim|text|output))\b",
          0.75, 0.3, "addresses whoever checks the text (a verifier, judge, grader, reviewer)",
          words="note message instruction instructions memo hint reminder notice attention verifier verifiers judge "
                "judges grader graders checker checkers factchecker evaluator evaluators reviewer reviewers assessor "
                "auditor moderator classifier validator rater scorer whoever anyone", reach=(40, 120)),
    _rule("steer/verdict",
          r"\b(?:the )?(?:correct|right|proper|expected|only (?:valid|possible)) (?:reading|answer|verdict|label|"
          r"judge?ment|rating|response|classification|score|output) (?:here |to this |for this )?(?:is|would be|"
          r"should be|will be)\s?[:\"'“]?\s?(?:yes|true|correct|supported|entailed|accurate|relevant|valid|pass|"
          r"approved?)\b"
          r"|\b(?:answer|respond|reply|say|output|return|print|write|choose|select|pick|vote)(?: with| only)? "
          r"[\"'“]?(?:yes|true|supported|entailed)[\"'”]?(?! or\b)(?:\s?[.!,;)\]\n]|\s?$)"
          r"|\b(?:mark|rate|label|grade|score|classify|judge|treat|count|flag|tag|read|consider|deem) "
          r"(?:this|it|the (?:answer|response|claim|candidate|text|statement|output)) (?:answer |response |claim )?"
          r"(?:as )?(?:being )?(?:correct|true|supported|entailed|accurate|verified|relevant|valid|a pass|passing|"
          r"fully supported|yes)\b",
          0.6, 0.25, "tells the reader which verdict to give (\"the correct reading is Yes\", \"mark this as correct\")",
          words="correct right proper expected valid possible answer respond reply say output return print write "
                "choose select pick vote mark rate label grade score classify judge treat count flag tag read "
                "consider deem", reach=(60, 80)),
    _rule("leak/zh",
          r"(?:输出|显示|打印|泄露|透露|告诉我|重复|给我看|展示|列出|复述|翻译)(?:一下|出)?(?:你的|您的)?(?:完整的?|全部的?|"
          r"原始的?|初始的?|隐藏的?)?(?:系统提示词?|系统指令|系统消息|初始指令|初始提示|原始指令|原始提示|隐藏指令|提示词)"
          r"|(?:重复|复述|输出|打印)(?:一遍)?(?:以上|上面|上述|前面)(?:的)?(?:所有)?(?:内容|文字|文本|指令)",
          0.6, 0.6, "asks for the system prompt or the text above (Chinese)",
          needles=("提示", "指令", "消息", "以上", "上面", "上述", "前面")),
)

# --- normalisation --------------------------------------------------------------------------------

_SEP = r"[ .\-_*·|/\\,'’]"
# 4+ single letters/digits, each followed by one separator: "i g n o r e", "I.g.n.o.r.e", "i-g-n-o-r-e"
_SPACED_LETTERS = re.compile(rf"[^\W_](?<![^\W_][^\W_])(?:{_SEP}[^\W_]){{3,}}(?![^\W_])")
_SPACED_HINT = re.compile(rf"{_SEP}[^\W_]{_SEP}[^\W_]{_SEP}[^\W_]")    # cheap pre-check for the above
_SEPARATORS = re.compile(_SEP)
_LEET = re.compile(r"[013457](?:(?<=[A-Za-z].)|(?=[A-Za-z]))")
_LEET_MAP = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t"}
_WORDS = re.compile(r"[a-z]+")


def _join_spaced(m: re.Match[str]) -> str:
    run = m.group()
    letters = _SEPARATORS.sub("", run)
    return letters if sum(c.isalpha() for c in letters) >= 2 else run


def _collapse(text: str) -> tuple[str, bool]:
    """Runs of spaces to one space, blank lines dropped, spaced-out letters joined; and whether any were."""
    text = "\n".join(line for line in (" ".join(raw.split()) for raw in text.splitlines()) if line)
    if not _SPACED_HINT.search(text):
        return text, False
    joined = _SPACED_LETTERS.sub(_join_spaced, text)
    return joined, joined != text


@dataclass(frozen=True)
class Normalised:
    display: str        # cleaned text, quoted in evidence
    match: str          # same length: leetspeak mapped (rules marked `cased` run on it)
    lower: str          # same length: `match` lower-cased (all other rules run on it)
    hidden_from: int    # where text decoded from tag characters starts (len(display) when none)
    joined: bool        # spaced-out letters were joined (then every rule runs on the whole text)


def normalise(text: str) -> Normalised:
    text = unicodedata.normalize("NFKC", text)
    hidden = ""
    odd = {c for c in set(text) if unicodedata.category(c) == "Cf" or 0xFE00 <= ord(c) <= 0xFE0F
           or 0xE0100 <= ord(c) <= 0xE01EF}
    if odd:
        if any(0xE0000 <= ord(c) <= 0xE007F for c in odd):
            hidden = decode_tags(text)
        text = text.translate({ord(c): None for c in odd})
    text, joined = _collapse(map_lookalikes(text))
    hidden_from = len(text)
    if hidden.strip():
        hidden, joined_hidden = _collapse(hidden)
        joined = joined or joined_hidden
        text = f"{text}\n{hidden}"
    match = _LEET.sub(lambda m: _LEET_MAP[m.group()], text)
    lower = match.lower()
    if len(lower) != len(match):      # a few characters lower-case to two ("İ"): keep offsets aligned
        lower = "".join(c.lower() if len(c.lower()) == 1 else c for c in match)
    return Normalised(text, match, lower, hidden_from, joined)


def _windows(positions: list[tuple[int, int]], before: int, after: int, size: int) -> list[tuple[int, int]]:
    spans = sorted((max(0, s - before), min(size, e + after)) for s, e in positions)
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


class InstructionPatterns:
    """Scores a text by the instruction patterns it contains."""

    name = "patterns"

    def __init__(self, rules: tuple[Rule, ...] = RULES):
        self.rules = rules
        self._by_word: dict[str, list[int]] = {}
        for i, rule in enumerate(rules):
            for w in rule.words:
                self._by_word.setdefault(w, []).append(i)
        self._trigger_words = frozenset(self._by_word)

    def warm_up(self) -> None:
        for rule in self.rules:
            rule.pattern         # noqa: B018 - compiles it (cached)

    def _first_match(self, rule: Rule, norm: Normalised,
                     positions: list[tuple[int, int]] | None) -> re.Match[str] | None:
        target = norm.match if rule.cased else norm.lower
        if positions is None:
            return rule.pattern.search(target)
        for a, b in _windows(positions, *rule.reach, len(target)):
            m = rule.pattern.search(target, a, b)
            if m:
                return m
        return None

    def matches(self, text: str) -> list[tuple[Rule, str, bool]]:
        """(rule, quoted span, found in hidden tag characters) for every rule that matches, in table order."""
        norm = normalise(text)
        low = norm.lower
        triggered: dict[int, list[tuple[int, int]]] = {}
        if not norm.joined and self._trigger_words.intersection(_WORDS.findall(low)):
            by_word = self._by_word
            for m in _WORDS.finditer(low):
                for i in by_word.get(m.group(), ()):
                    triggered.setdefault(i, []).append(m.span())
        out: list[tuple[Rule, str, bool]] = []
        for i, rule in enumerate(self.rules):
            if rule.words:
                if norm.joined:
                    positions = None
                elif i in triggered:
                    positions = triggered[i]
                else:
                    continue
            elif rule.needles and not any(n in low for n in rule.needles):
                continue
            else:
                positions = None
            m = self._first_match(rule, norm, positions)
            if m:
                out.append((rule, printable(norm.display[m.start():m.end()]), m.start() >= norm.hidden_from))
        return out

    def scan(self, text: str, channel: Channel) -> Finding:
        found = self.matches(text)
        if not found:
            return Finding(self.name, 0.0)
        keep = 1.0
        evidence: list[str] = []
        for rule, quote, hidden in sorted(found, key=lambda f: -f[0].weight_in(channel)):
            w = rule.weight_in(channel)
            keep *= 1.0 - w
            where = " (in hidden tag characters)" if hidden else ""
            evidence.append(f'{rule.name} ({w:.2f}): {rule.description}: "{quote}"{where}')
        return Finding(self.name, round(1.0 - keep, 4), tuple(evidence))
