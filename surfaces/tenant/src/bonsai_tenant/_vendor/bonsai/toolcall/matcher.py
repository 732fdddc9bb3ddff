"""Byte-level incremental matcher for one tool call: which bytes may come next, given a prefix.

A *stack* is a tuple of immutable frames (top last); a *state* is a tuple of stacks, one per
alternative still alive (anyOf, or which tool is being named). `advance(state, byte)` returns
the next state, empty when the byte is impossible. States are hashable and small (they remember
the phase of each open value, never the text itself), so masks can be cached per state.

Grammar: [`<tool_call>`] nl? CALL nl? `</tool_call>`, where CALL is the JSON
`{"name": "<declared tool>", "arguments": {<that tool's schema>}}` with at most one space after
each `:` and `,` and no other whitespace (the Hermes layout; a small model left free to pick
whitespace wanders into blank lines), and nl is at most one newline. Inside strings `</` is not allowed (so `</tool_call>` can never appear in
a string: the streaming parser would cut there; a model can write `<\\/` instead).
"""

from __future__ import annotations

from .events import CLOSE_TAG, OPEN_TAG
from .grammar import AltNode, ArrNode, LitNode, Node, NumNode, ObjNode, StrNode

MAX_WS = 1
OPEN = OPEN_TAG.encode()
CLOSE = CLOSE_TAG.encode()
WS = frozenset(b" ")  # inside the JSON, only after `:` and `,`
NL = frozenset(b"\n")  # around the JSON, inside the tags
DIGITS = frozenset(b"0123456789")
HEX = frozenset(b"0123456789abcdefABCDEF")
ESCAPES = frozenset(b'"\\/bfnrtu')
QUOTE, BACKSLASH, LT, SLASH = ord('"'), ord("\\"), ord("<"), ord("/")
LBRACE, RBRACE, LBRACK, RBRACK, COLON, COMMA = (ord(c) for c in "{}[]:,")

# frame kinds
VAL, OBJ, ARR, STR, NUM, LIT, ROOT, CHARS = range(8)
# object phases
O_OPEN, O_KEY, O_COLON, O_VALUE, O_COMMA = range(5)
# array phases
A_OPEN, A_VALUE, A_COMMA = range(3)
# string phases (10 + n: n hex digits of a \uXXXX escape still to come)
S_BODY, S_LT, S_ESC = range(3)
# number phases; the complete ones may end the number
N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP1, N_EXP2 = range(9)
N_COMPLETE = frozenset({N_ZERO, N_INT, N_FRAC, N_EXP1, N_EXP2})
# root phases
R_OPEN, R_BEFORE, R_AFTER, R_CLOSE, R_BETWEEN, R_END = range(6)

Stack = tuple
State = tuple
DONE: Stack = ()  # the call is complete, `</tool_call>` included


def _start(rest: Stack, node: Node, b: int) -> list[Stack]:
    """Begin a value of `node` whose first byte is `b`."""
    if isinstance(node, AltNode):
        return [s for option in node.options for s in _start(rest, option, b)]
    if isinstance(node, StrNode):
        if b != QUOTE:
            return []
        if node.charset is not None:
            return [(*rest, (CHARS, node.charset, node.min_length))]
        return [(*rest, (STR, S_BODY, node.min_length))]
    if isinstance(node, NumNode):
        if b == ord("-"):
            return [(*rest, (NUM, node.integer, N_MINUS))]
        if b == ord("0"):
            return [(*rest, (NUM, node.integer, N_ZERO))]
        return [(*rest, (NUM, node.integer, N_INT))] if b in DIGITS else []
    if isinstance(node, LitNode):
        first = bytes([b])
        return [(*rest, (LIT, node, first))] if any(o.startswith(first) for o in node.options) else []
    if isinstance(node, ObjNode):
        return [(*rest, (OBJ, node, O_OPEN, frozenset(), b"", 0))] if b == LBRACE else []
    if isinstance(node, ArrNode):
        return [(*rest, (ARR, node, A_OPEN, 0))] if b == LBRACK else []
    return []


def _free_keys(node: ObjNode, seen: frozenset[int]) -> list[int]:
    if node.ordered:
        nxt = len(seen)
        return [nxt] if nxt < len(node.keys) else []
    return [i for i in range(len(node.keys)) if i not in seen]


def _step(stack: Stack, b: int) -> list[Stack]:
    if not stack:
        return [DONE]
    top, rest = stack[-1], stack[:-1]
    kind = top[0]
    if kind == CHARS:  # a string limited to a character class (`pattern: ^[...]+$`): no escapes
        _, charset, need = top
        if b == QUOTE:
            return [rest] if not need else []
        return [(*rest, (CHARS, charset, max(0, need - 1)))] if b in charset else []
    if kind == STR:
        _, phase, need = top  # need: characters still required by minLength
        if phase <= S_LT:
            if b == QUOTE:
                return [rest] if not need else []
            counted = max(0, need - 1)
            if b == BACKSLASH:
                return [(*rest, (STR, S_ESC, counted))]
            if b < 0x20 or (b == SLASH and phase == S_LT):
                return []
            if b & 0xC0 == 0x80:  # a UTF-8 continuation byte: same character, nothing counted
                counted = need
            return [(*rest, (STR, S_LT if b == LT else S_BODY, counted))]
        if phase == S_ESC:
            if b not in ESCAPES:
                return []
            return [(*rest, (STR, 14 if b == ord("u") else S_BODY, need))]
        if b not in HEX:
            return []
        return [(*rest, (STR, S_BODY if phase == 11 else phase - 1, need))]
    if kind == VAL:
        if b in WS:
            return [(*rest, (VAL, top[1], top[2] + 1))] if top[2] < MAX_WS else []
        return _start(rest, top[1], b)
    if kind == OBJ:
        return _step_object(top, rest, b)
    if kind == ARR:
        _, node, phase, ws = top
        if b in WS:
            return [(*rest, (ARR, node, phase, ws + 1))] if ws < MAX_WS and phase == A_COMMA else []
        if phase != A_COMMA and b == RBRACK:
            return [rest]
        if phase == A_VALUE:
            return [(*rest, (ARR, node, A_COMMA, 0))] if b == COMMA else []
        return _start((*rest, (ARR, node, A_VALUE, 0)), node.items, b)
    if kind == NUM:
        _, integer, phase = top
        nxt = _number_phase(phase, b, integer)
        if nxt is not None:
            return [(*rest, (NUM, integer, nxt))]
        return _step(rest, b) if phase in N_COMPLETE else []
    if kind == LIT:
        _, node, prefix = top
        longer = prefix + bytes([b])
        if any(o.startswith(longer) for o in node.options):
            return [(*rest, (LIT, node, longer))]
        return _step(rest, b) if prefix in node.options else []
    return _step_root(top, rest, b)


def _number_phase(phase: int, b: int, integer: bool) -> int | None:
    digit = b in DIGITS
    if phase == N_MINUS:
        return N_ZERO if b == ord("0") else N_INT if digit else None
    if phase in (N_INT, N_FRAC) and digit:
        return phase
    if phase in (N_ZERO, N_INT) and b == ord(".") and not integer:
        return N_DOT
    if phase in (N_ZERO, N_INT, N_FRAC) and b in (ord("e"), ord("E")) and not integer:
        return N_E
    if phase in (N_DOT,) and digit:
        return N_FRAC
    if phase == N_E and b in (ord("+"), ord("-")):
        return N_ESIGN
    if phase in (N_E, N_ESIGN) and digit:
        return N_EXP1
    if phase == N_EXP1 and digit:
        return N_EXP2  # at most two exponent digits: no 1e999 = inf
    return None


def _step_object(top: tuple, rest: Stack, b: int) -> list[Stack]:
    _, node, phase, seen, key, ws = top
    if phase == O_KEY:
        free = _free_keys(node, seen)
        if b == QUOTE:
            hit = [i for i in free if node.keys[i] == key]
            return [(*rest, (OBJ, node, O_COLON, seen, hit[0], 0))] if hit else []
        longer = key + bytes([b])
        if any(node.keys[i].startswith(longer) for i in free):
            return [(*rest, (OBJ, node, O_KEY, seen, longer, 0))]
        return []
    if b in WS:
        return [(*rest, (OBJ, node, phase, seen, key, ws + 1))] if ws < MAX_WS and phase == O_COMMA else []
    if phase in (O_OPEN, O_COMMA) and b == QUOTE:
        if node.free is not None:  # a free-form object: the key is any string (key -1: no declared one)
            return [(*rest, (OBJ, node, O_COLON, seen, -1, 0), (STR, S_BODY, 0))]
        return [(*rest, (OBJ, node, O_KEY, seen, b"", 0))] if _free_keys(node, seen) else []
    if phase in (O_OPEN, O_VALUE) and b == RBRACE:
        return [rest] if node.required <= seen else []
    if phase == O_COLON and b == COLON:
        if key < 0:
            return [(*rest, (OBJ, node, O_VALUE, seen, b"", 0), (VAL, node.free, 0))]
        done = seen | {key}
        return [(*rest, (OBJ, node, O_VALUE, done, b"", 0), (VAL, node.values[key], 0))]
    if phase == O_VALUE and b == COMMA:
        more = node.free is not None or _free_keys(node, seen)
        return [(*rest, (OBJ, node, O_COMMA, seen, b"", 0))] if more else []
    return []


def _step_root(top: tuple, rest: Stack, b: int) -> list[Stack]:
    _, node, phase, k = top
    if phase == R_OPEN:
        if b != OPEN[k]:
            return []
        return [(*rest, (ROOT, node, R_BEFORE, 0) if k + 1 == len(OPEN) else (ROOT, node, R_OPEN, k + 1))]
    if phase == R_END:  # the turn must end: no byte may follow
        return []
    if phase == R_BETWEEN:  # after a call: newlines, then only another <tool_call>
        if b in NL:
            return [(*rest, (ROOT, node, R_BETWEEN, k + 1))] if k < 2 else []
        return [(*rest, (ROOT, node, R_OPEN, 1))] if b == OPEN[0] else []
    if phase == R_CLOSE:
        if b != CLOSE[k]:
            return []
        return [DONE] if k + 1 == len(CLOSE) else [(*rest, (ROOT, node, R_CLOSE, k + 1))]
    if b in NL:
        return [(*rest, (ROOT, node, phase, k + 1))] if k < 1 else []
    if phase == R_BEFORE:
        return _start((*rest, (ROOT, node, R_AFTER, 0)), node, b)
    return [(*rest, (ROOT, node, R_CLOSE, 1))] if b == CLOSE[0] else []


class CallMatcher:
    """The automaton for one registry's tool calls (`call_node` compiled once)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self._forced: dict[State, int | None] = {}

    def forced_byte(self, state: State) -> int | None:
        """The only byte that may follow `state`, or None when there is a choice (cached per state)."""
        if state not in self._forced:
            valid = [b for b in range(256) if self.advance(state, b)] if not self.done(state) else []
            self._forced[state] = valid[0] if len(valid) == 1 else None
        return self._forced[state]

    def start(self, with_open_tag: bool = False) -> State:
        """The state right after `<tool_call>`, or before it when the tag itself is required."""
        return (((ROOT, self.node, R_OPEN if with_open_tag else R_BEFORE, 0),),)

    def value_start(self) -> State:
        """The state before a bare JSON value of the node (no tags, no leading space): a JSON reply.
        `done` once the value closes; a number, which only ends at the next byte, is not a bare value."""
        return (((VAL, self.node, MAX_WS),),)

    def between_calls(self) -> State:
        """The state after a call when calls end the turn: newlines, another call, or (outside
        this automaton) the end of the turn."""
        return (((ROOT, self.node, R_BETWEEN, 0),),)

    def turn_end(self) -> State:
        """The state after the last call allowed: nothing but the end of the turn may follow."""
        return (((ROOT, self.node, R_END, 0),),)

    @staticmethod
    def at_turn_end_choice(state: State) -> bool:
        """True where ending the turn (a special token such as EOS) is allowed too."""
        return any(s and s[-1][0] == ROOT and s[-1][2] in (R_BETWEEN, R_END) for s in state)

    @staticmethod
    def advance(state: State, b: int) -> State:
        """The state after byte `b`; `()` when `b` cannot come next."""
        if len(state) == 1:
            return tuple(_step(state[0], b))
        out: dict[Stack, None] = {}
        for stack in state:
            for nxt in _step(stack, b):
                out[nxt] = None
        return tuple(out)

    def feed(self, state: State, data: bytes) -> State:
        for b in data:
            state = self.advance(state, b)
            if not state:
                break
        return state

    @staticmethod
    def done(state: State) -> bool:
        return DONE in state

    @staticmethod
    def in_string_body(state: State) -> bool:
        """True when every alternative sits in a free string body (safe bytes loop back here)."""
        return bool(state) and all(s and s[-1] == (STR, S_BODY, 0) for s in state)


def string_safe(b: int) -> bool:
    """Bytes that keep a string body in the same state: not `"`, `\\`, `<` or a control byte."""
    return b >= 0x20 and b not in (QUOTE, BACKSLASH, LT)
