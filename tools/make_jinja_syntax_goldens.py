#!/usr/bin/env python3
"""The Jinja syntax table: small template + context -> output (or exception class),
rendered by jinja2 in the environment transformers builds for chat templates
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, generation,
tojson/raise_exception/strftime_now overrides) — transformers' own _compile_jinja_template.

  ~/.venv-sft/bin/python tools/make_jinja_syntax_goldens.py
writes tests/fixtures/chat_templates/jinja_syntax.json.
"""
import json
import os

from transformers.utils.chat_template_utils import _cached_compile_jinja_template

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "chat_templates", "jinja_syntax.json")

M = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
CTX = {"messages": M, "n": 7, "f": 2.5, "s": "Hello World", "l": [3, 1, 2], "d": {"b": 2, "a": 1},
       "e": [], "t": True, "u8": "héllo wörld ✓", "people": [{"name": "Ann", "age": 30}, {"name": "bob", "age": 25},
       {"name": "Cid", "age": 35, "x": None}], "words": ["b", "A", "c", "a"], "nested": {"x": {"y": [1, {"z": "deep"}]}}}

T = [
    # data, whitespace control, comments, raw
    "plain text", "a\nb\n", "a\r\nb", "{# comment #}x", "x {#- c -#} y", "  {# c #}\nx", "{{ 'a' }}\n{{ 'b' }}",
    "{% if t %}\nyes\n{% endif %}\n", "  {% if t %}x{% endif %}", "  {%+ if t %}x{% endif %}", "a  {%- if t %} b {% endif -%}  c",
    "{% if t +%}\nkeep{% endif %}", "x\n  {{ 'v' }}\n", "{{- '  ' -}}|", "a\n\n{%- if t %}b{% endif %}",
    "{% raw %}{{ not rendered }}{% endraw %}", "{%- raw -%}  {% x %}  {%- endraw -%}", "{{ '{{' }}", "line1\n    {% if true %}\n    indented\n    {% endif %}\nend",
    "{% for i in l %}\n  {{ i }}\n{% endfor %}", "{%- for i in l -%}\n{{ i }},\n{%- endfor %}", "\t{% if t %}tab{% endif %}",
    # literals
    "{{ 'a\\nb' }}", "{{ \"dq 'x'\" }}", "{{ 'tab\\there' }}", "{{ '\\u00e9\\x41' }}", "{{ 'a' 'b' }}", "{{ 42 }}", "{{ -3 }}", "{{ 1_000 }}",
    "{{ 2.5 }}", "{{ 1e3 }}", "{{ 0.1 + 0.2 }}", "{{ 1.0 }}", "{{ 1e-7 }}", "{{ 1e22 }}", "{{ true }}{{ True }}{{ false }}", "{{ none }}{{ None }}",
    "{{ [1, 'a', none, true] }}", "{{ (1, 2) }}", "{{ (1,) }}", "{{ () }}", "{{ {'k': 'v', 'n': 1} }}", "{{ {'a': [1, {'b': 'c'}]} }}",
    "{{ 'it\\'s' }}", "{{ [\"it's\"] }}", "{{ ['a\\nb'] }}", "{{ 1, 2 }}",
    # arithmetic
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }}", "{{ 7 / 2 }} {{ 6 / 2 }}", "{{ 2 ** 10 }} {{ 2 ** -1 }}", "{{ 2 ** 3 ** 2 }}",
    "{{ 1 + 2 * 3 }}", "{{ (1 + 2) * 3 }}", "{{ 'ab' * 3 }}", "{{ [1] * 3 }}", "{{ 'a' + 'b' }}", "{{ [1] + [2] }}", "{{ 'n=' ~ n ~ f }}",
    "{{ 1 + 1.5 }}", "{{ 7.5 // 2 }}", "{{ -f }}", "{{ 1 / 0 }}", "{{ 'a' + 1 }}", "{{ n - 10 }}", "{{ 10 - 2 - 3 }}", "{{ 2 * -1 }}",
    "{{ '%s and %s' % ('a', 'b') }}", "{{ '%d items' % n }}",
    # comparisons and logic
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}", "{{ 1 == 1.0 }} {{ 'a' != 'b' }}", "{{ 'a' < 'b' }}", "{{ [1, 2] == [1, 2] }}",
    "{{ 'ell' in s }} {{ 4 in l }} {{ 'a' in d }} {{ 2 not in l }}", "{{ t and 'yes' }}", "{{ e or 'empty' }}", "{{ not t }}",
    "{{ none and 1 }}", "{{ 0 or '' or 'last' }}", "{{ not e and n > 5 }}", "{{ 1 < 'a' }}", "{{ 'yes' if t else 'no' }}",
    "{{ 'yes' if e }}|", "{{ 'a' if false else 'b' if true else 'c' }}", "{{ (n > 5) == true }}",
    # attribute / subscript / slicing
    "{{ messages[0].role }}", "{{ messages[-1]['content'] }}", "{{ messages[5] }}|", "{{ d.a }}{{ d['b'] }}", "{{ d.missing }}|",
    "{{ nested.x.y[1].z }}", "{{ l[1:] }}", "{{ l[::-1] }}", "{{ l[-2:] }}", "{{ l[:1] }}", "{{ s[::2] }}", "{{ s[-5:] }}",
    "{{ u8[1:4] }}", "{{ u8[-1] }}", "{{ messages[::-1] | map(attribute='role') | join(',') }}", "{{ l.0 }}", "{{ d.missing.deeper }}",
    "{{ undefined_thing }}|", "{{ undefined_thing.attr }}", "{{ s[100] }}|",
    # tests
    "{{ n is defined }}{{ zz is defined }}{{ zz is undefined }}", "{{ none is none }}{{ 0 is none }}", "{{ s is string }}{{ n is string }}",
    "{{ n is number }}{{ f is number }}{{ t is number }}", "{{ n is integer }}{{ f is integer }}{{ f is float }}", "{{ t is boolean }}{{ 1 is boolean }}",
    "{{ t is true }}{{ 1 is true }}{{ false is false }}", "{{ d is mapping }}{{ l is mapping }}", "{{ l is sequence }}{{ s is sequence }}{{ n is sequence }}",
    "{{ l is iterable }}{{ n is iterable }}", "{{ raise_exception is callable }}{{ s is callable }}", "{{ n is odd }}{{ n is even }}",
    "{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}", "{{ n is eq 7 }}{{ n is equalto 8 }}{{ n is ne 8 }}", "{{ 3 is lt 4 }}{{ 3 is le 3 }}{{ 3 is gt 4 }}{{ 3 is ge 3 }}",
    "{{ 2 is in l }}", "{{ l is sameas l }}", "{{ n is not none }}", "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}",
    "{{ 'abc' is lower }}{{ 'ABC' is upper }}",
    # filters
    "{{ '  pad  ' | trim }}|", "{{ 'xxhixx' | trim('x') }}", "{{ l | length }}{{ s | count }}{{ u8 | length }}", "{{ s | upper }} {{ s | lower }}",
    "{{ 'hello wORLD-x (y' | title }}", "{{ 'hELLO' | capitalize }}", "{{ s | replace('l', 'L') }}", "{{ s | replace('l', 'L', 2) }}",
    "{{ l | join('-') }}", "{{ people | join(', ', attribute='name') }}", "{{ l | first }}{{ l | last }}", "{{ e | first }}|", "{{ s | list }}",
    "{{ l | select('odd') | list }}", "{{ l | reject('odd') | list }}", "{{ people | selectattr('age', 'gt', 26) | map(attribute='name') | list }}",
    "{{ people | rejectattr('x') | map(attribute='name') | join }}", "{{ people | selectattr('x', 'none') | map(attribute='name') | first }}",
    "{{ l | map('string') | join('+') }}", "{{ people | map(attribute='missing', default='?') | join }}", "{{ zz | default('dflt') }}",
    "{{ '' | default('empty', true) }}{{ '' | d('x') }}|", "{{ d | items | list }}", "{{ n | string ~ '!' }}", "{{ '42' | int + 1 }}{{ 'x' | int }}{{ '3.9' | int }}",
    "{{ '2.5' | float * 2 }}{{ 'x' | float }}", "{{ -3 | abs }}{{ (-3) | abs }}", "{{ 2.567 | round(2) }}{{ 2.5 | round }}{{ 2.1 | round(0, 'ceil') }}",
    "{{ [1, 2, 1, 'a', 'A'] | unique | list }}", "{{ l | reverse | list }}{{ s | reverse }}", "{{ l | sort }}{{ l | sort(reverse=true) }}",
    "{{ words | sort }}{{ words | sort(case_sensitive=true) }}", "{{ people | sort(attribute='age') | map(attribute='name') | join }}", "{{ d | dictsort }}",
    "{{ d | dictsort(by='value', reverse=true) }}", "{{ l | min }}{{ l | max }}{{ words | max }}", "{{ people | max(attribute='age') }}", "{{ l | sum }}{{ people | sum(attribute='age') }}",
    "{{ 'a\\nb\\n\\nc' | indent(2) }}", "{{ 'a\\nb' | indent(2, true) }}", "{{ 'a\\n\\nb' | indent(width='> ', blank=true) }}", "{{ 'one two  three' | wordcount }}",
    "{{ '<b>' | safe }}{{ '<a href=\"x\">&' | e }}{{ '\\'' | escape }}", "{{ l | batch(2) | list }}", "{{ [1,2,3] | batch(2, 0) | list }}",
    "{{ d | tojson }}", "{{ messages[0] | tojson(indent=2) }}", "{{ {'b': 1, 'a': [1, 2]} | tojson(sort_keys=true) }}", "{{ {'a': 1, 'b': 2} | tojson(separators=(',', ':')) }}",
    "{{ u8 | tojson }}", "{{ 'q\"\\\\\\n\\t' | tojson }}", "{{ [1.5, none, true] | tojson }}", "{{ [] | tojson(indent=2) }}{{ {} | tojson }}",
    "{{ {'x': {'y': []}} | tojson(indent=1) }}", "{{ zz | tojson }}", "{{ u8 | tojson(ensure_ascii=true) }}", "{{ 1e20 | tojson }}{{ 3.0 | tojson }}",
    "{{ d | length }}", "{{ zz | length }}", "{{ 'abc' | center(9) }}|", "{{ d | attr('a') }}|", "{{ '%s-%s' | format(1, 2) }}",
    "{{ l | map('abs') | list }}", "{{ 'x' | nofilter }}",
    # methods
    "{{ '  x  '.strip() }}|{{ 'xxyxx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ 'x\\n\\n'.rstrip('\\n') }}|", "{{ 'a,b,,c'.split(',') }}", "{{ ' a  b c '.split() }}",
    "{{ 'a,b,c'.split(',', 1) }}", "{{ 'a,b,c'.rsplit(',', 1) }}", "{{ s.startswith('Hell') }}{{ s.endswith(('x', 'ld')) }}", "{{ s.upper() }}{{ s.lower() }}{{ 'ab cd'.title() }}",
    "{{ s.replace('o', '0') }}", "{{ s.find('o') }}{{ s.find('z') }}{{ s.rfind('o') }}{{ u8.find('w') }}", "{{ s.count('l') }}", "{{ '{} + {} = {x}'.format(1, 2, x=3) }}",
    "{{ '-'.join(['a', 'b']) }}", "{{ d.items() | list }}", "{{ d.keys() | list }}{{ d.values() | list }}", "{{ d.get('a') }}{{ d.get('zz') }}{{ d.get('zz', 'dflt') }}",
    "{{ 'a\\nb\\r\\nc'.splitlines() }}", "{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}", "{{ 'abc'.capitalize() }}", "{{ l.index(2) }}{{ l.count(3) }}",
    "{{ l.append(4) }}", "{{ d.update({'c': 3}) }}", "{{ d.pop('a') }}", "{{ s.nomethod() }}",
    # set, namespace, scoping
    "{% set x = 5 %}{{ x }}", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", "{% set x = 0 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }}",
    "{% set ns = namespace(c=0) %}{% for i in l %}{% set ns.c = ns.c + i %}{% endfor %}{{ ns.c }}", "{% set ns = namespace(a=1, b='x') %}{{ ns.a }}{{ ns.b }}{{ ns.zz }}|",
    "{% set x %}block {{ n }}{% endset %}[{{ x }}]", "{% set x | upper %}shout{% endset %}{{ x }}", "{% if t %}{% set y = 'in-if' %}{% endif %}{{ y }}",
    "{% set ns = namespace(_bad=1) %}", "{% set ns = namespace() %}{% set ns._x = 1 %}", "{% set x = 1 %}{% set x = x + 1 %}{{ x }}", "{% with a = 3 %}{{ a }}{% endwith %}{{ a }}|",
    "{% set x = 0 %}{% for i in l %}{{ x }}{% set x = i %}{% endfor %}|{{ x }}",
    # for loops
    "{% for i in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }} {% endfor %}", "{% for i in l %}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}",
    "{% for i in l %}{{ loop.previtem }}-{{ loop.nextitem }} {% endfor %}", "{% for i in l %}{{ loop.cycle('a', 'b') }}{% endfor %}", "{% for i in e %}x{% else %}empty{% endfor %}",
    "{% for i in l if i > 1 %}{{ i }}{{ loop.length }} {% endfor %}", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{% for k in d %}{{ k }}{% endfor %}",
    "{% for c in 'héy' %}[{{ c }}]{% endfor %}", "{% for i in l %}{% for j in l %}{% if j == i %}{% break %}{% endif %}{{ j }}{% endfor %};{% endfor %}",
    "{% for i in l %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}", "{% for i in l %}{% for j in [0] %}{{ loop.depth }}{% endfor %}{{ loop.depth }}{% endfor %}",
    "{% for i in l %}{% set outer = loop %}{% for j in [1] %}{{ outer.index }}{{ loop.index }}{% endfor %}{% endfor %}", "{% for x in zz %}x{% endfor %}|",
    "{% for x in n %}x{% endfor %}", "{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 10, 4) %}{{ i }}{% endfor %}", "{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}",
    "{% for m in messages %}{{ m.role[0] }}{% endfor %}", "{% for i in l %}{{ loop.changed(i) if false else i }}{% endfor %}",
    # if
    "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}", "{% if e %}a{% elif zz %}b{% else %}c{% endif %}", "{% if not zz %}undef falsy{% endif %}",
    "{% if messages[0].role == 'system' and messages|length > 1 %}ok{% endif %}",
    # macros, call, filter blocks
    "{% macro m(a, b='B') %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}", "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}",
    "{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}inner{% endcall %}", "{% macro w() %}{{ caller(5) }}{% endmacro %}{% call(x) w() %}got {{ x }}{% endcall %}",
    "{% filter upper %}up {{ s }}{% endfilter %}", "{% filter replace('a', 'b') | upper %}banana{% endfilter %}", "{% macro r(k) %}{% if k > 0 %}{{ k }}{{ r(k - 1) }}{% endif %}{% endmacro %}{{ r(3) }}",
    # generation blocks
    "a{% generation %}gen {{ n }}{% endgeneration %}b", "{%- for m in messages %}{%- if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}",
    # globals
    "{{ raise_exception('custom failure') }}", "{{ namespace(a=1).a }}", "{{ dict(a=1, b=2) }}", "{{ range(3) | list }}", "{{ strftime_now('%Y') | length }}",
    # errors
    "{% if %}", "{% for %}", "{{ }}", "{% endfor %}", "{% if t %}unclosed", "{{ 'unterminated }}", "{% unknown %}", "{{ x | }}", "{{ 1 + }}", "{# unclosed comment",
    "{{ (1 }}", "{% set %}", "{% break %}", "{{ s.strip(1) }}", "{{ n() }}", "{{ zz() }}", "{{ zz + 1 }}", "{{ - zz }}", "{{ none.attr }}|", "{{ n.attr }}|", "{{ l['x'] }}|",
    "{{ l[1:2:0] }}", "{{ [1, 'a'] | sort }}", "{% for a, b in [1, 2] %}{% endfor %}", "{% set a, b = [1, 2, 3] %}", "{{ 1 is nosuchtest }}",
]


def main():
    cases = []
    for i, src in enumerate(T):
        case = {"id": i, "template": src}
        try:
            tmpl = _cached_compile_jinja_template(src)
            case["output"] = tmpl.render(**CTX)
        except Exception as e:  # noqa: BLE001 - the table records what jinja2 raises
            case["error"] = type(e).__name__
            case["message"] = str(e)
        cases.append(case)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"context": CTX, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases, {sum('error' in c for c in cases)} raise")


if __name__ == "__main__":
    main()
