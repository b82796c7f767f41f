// The Jinja interpreter on its own: expressions, filters, tests, methods, loops and whitespace control, each snippet
// compared with Jinja2's rendering of it; and the errors, with their template lines.

#include <gtest/gtest.h>

#include "tests/lm/jinja_reference.h"

namespace nuvec::lm::testing {
namespace {

using nlohmann::ordered_json;

// Variables every snippet sees (as extra variables), besides messages.
const char* const variables_json = R"({
  "s": "  Hello, World!  ", "name": "nuvec", "n": 7, "x": 2.5, "big": 12345678901234, "neg": -3, "flag": true,
  "nothing": null, "empty": "", "items": [3, 1, 2], "words": ["b", "A", "c", "a"],
  "d": {"z": 1, "a": [1, 2], "m": {"k": "v"}}, "uni": "Ça va? 👋 日本",
  "people": [{"name": "Ann", "age": 31, "tags": ["x"]}, {"name": "bob", "age": 25}, {"name": "Cy", "age": 31, "admin": true}],
  "floats": [1.0, 0.1, 1e-7, 1e16, 123456789.123, -0.0, 3.0e20]
})";

struct Snippet {
  const char* name;
  const char* source;
};

// Each renders through both Jinja2 and nuvec; the names are the test's labels.
const Snippet snippets[] = {
    // literals and printing
    {"print_values", "{{ n }}|{{ x }}|{{ flag }}|{{ nothing }}|{{ items }}|{{ d }}|{{ words }}|{{ undefined_name }}|"},
    {"print_floats",
     "{% for f in floats %}{{ f }} {% endfor %}{{ 1/3 }} {{ 2/1 }} {{ 10**18 }} {{ 0.1+0.2 }} {{ big * 1000 }}"},
    {"string_escapes", "{{ 'a\\nb\\t\\'c\\' \\\\ \\u00e9 \\x41' }}{{ \"dq 'x'\" }}{{ 'adj' 'acent' }}"},
    {"repr_strings",
     "{{ ['it\\'s', \"q\\\"\", 'nl\\n', 'é', ''] }}{{ ('one',) }}{{ (1, 'a') }}{{ {'k': none, 1: true} }}"},
    {"literals", "{{ [1, 2.0, 'three', [4], {'five': 5}] }} {{ {'a': 1, 'b': [true, false, none]} }} {{ () }}"},
    // arithmetic and operators
    {"arithmetic",
     "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 % 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} "
     "{{ 7 / 2 }} {{ 1 + 2 * 3 - 4 }} {{ -2 ** 2 }} {{ n * 1.5 }} {{ 'ab' * 3 }} {{ [0] * 2 }}"},
    {"concat", "{{ 'a' ~ 1 ~ none ~ true ~ undefined_name ~ 2.0 }} {{ 'x' + 'y' }} {{ [1] + [2] }}"},
    {"comparisons",
     "{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 != 2 }} "
     "{{ 'ell' in 'hello' }} {{ 3 in items }} {{ 'z' in d }} {{ 'q' not in d }} {{ none == none }}"},
    {"logic",
     "{{ 0 or 'fallback' }} {{ 'a' and 'b' }} {{ not empty }} {{ nothing or [] }} {{ flag and n }} "
     "{{ 'yes' if flag else 'no' }} {{ 'yes' if nothing else 'no' }} [{{ 'shown' if nothing }}]"},
    {"precedence", "{{ 1 + -2 | abs }} {{ -3 | abs }} {{ not 1 == 2 }} {{ 'a' ~ 'b' | upper }} {{ 2 * 3 ** 2 }}"},
    // subscripts, attributes, slices
    {"access",
     "{{ d.z }} {{ d['a'][1] }} {{ d.m.k }} {{ people[0].name }} {{ people[-1]['age'] }} {{ items.1 }} "
     "{{ d.missing }}|{{ d['missing'] }}|{{ items[10] }}|"},
    {"slices",
     "{{ items[::-1] }} {{ items[1:] }} {{ items[:-1] }} {{ s[2:7] }} {{ uni[::-1] }} {{ uni[3] }} "
     "{{ items[::2] }} {{ 'abcdef'[-3:] }} {{ items[5:] }} {{ words[1:3] }}"},
    // filters
    {"string_filters",
     "{{ s|trim }}|{{ s|upper }}|{{ s|lower }}|{{ 'hello world-x (y)'|title }}|{{ 'hELLO'|capitalize }}|"
     "{{ s|length }}|{{ uni|length }}|{{ 'a-b-c'|replace('-', '+') }}|{{ 'aaa'|replace('a', 'b', 2) }}|"
     "{{ '%s is %d'|format('n', 3) }}|{{ 'one two  three'|wordcount }}|{{ 'xxhixx'|trim('x') }}"},
    {"list_filters",
     "{{ items|first }} {{ items|last }} {{ items|join(', ') }} {{ items|sort }} {{ items|sort(reverse=true) }} "
     "{{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ words|unique|list }} {{ items|sum }} "
     "{{ items|min }} {{ items|max }} {{ words|max }} {{ items|list }} {{ 'abc'|list }} {{ items|reverse|list }} "
     "{{ items|batch(2)|list }} {{ items|length }} {{ items|count }}"},
    {"default_filter",
     "{{ undefined_name|default('dflt') }} {{ empty|default('e') }} {{ empty|default('e', true) }} "
     "{{ nothing|d('n') }} {{ undefined_name|default }}|"},
    {"conversions",
     "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.9|int }} {{ '2.5'|float }} "
     "{{ 3|float }} {{ 7|string }} {{ x|round }} {{ 2.675|round(2) }} {{ 2.5|round }} {{ 3.14159|round(2, 'floor') }} "
     "{{ -4|abs }} {{ nothing|string }}"},
    {"tojson",
     "{{ d|tojson }}\n{{ people|tojson(indent=2) }}\n{{ uni|tojson }}\n{{ floats|tojson }}\n"
     "{{ d|tojson(sort_keys=true) }}\n{{ {'a': [], 'b': {}}|tojson(indent=4) }}\n{{ 'q\"\\\\\\n\\t'|tojson }}\n"
     "{{ d|tojson(separators=(',', ':')) }}\n{{ nothing|tojson }} {{ flag|tojson }} {{ uni|tojson(ensure_ascii=true) "
     "}}"},
    {"dict_filters",
     "{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|items|list }} {% for k, v in d|items %}{{ k }}={{ v }};{% "
     "endfor %}"},
    {"select_filters",
     "{{ people|selectattr('age', 'equalto', 31)|map(attribute='name')|join(',') }} "
     "{{ people|rejectattr('admin')|map(attribute='name')|list }} {{ people|selectattr('admin', 'defined')|list|length "
     "}} "
     "{{ items|select('odd')|list }} {{ items|reject('even')|list }} {{ words|map('upper')|list }} "
     "{{ people|map(attribute='tags', default=[])|list }} {{ people|sort(attribute='age')|map(attribute='name')|join "
     "}} "
     "{{ people|map(attribute='age')|unique|list }} {{ items|select('gt', 1)|list }} {{ people|sum(attribute='age') "
     "}}"},
    {"indent_filter",
     "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb\\n'|indent(width=3, blank=true) }}|"},
    {"escape_filters", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|safe }} {{ 'x'|center(7) }}|"},
    // tests
    {"tests",
     "{{ n is defined }} {{ nope is undefined }} {{ nothing is none }} {{ s is string }} {{ n is number }} "
     "{{ x is float }} {{ n is integer }} {{ flag is boolean }} {{ d is mapping }} {{ items is iterable }} "
     "{{ s is sequence }} {{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ n is eq 7 }} {{ n is ne 7 }} "
     "{{ n is lt 8 }} {{ n is gt 8 }} {{ n is le 7 }} {{ n is ge 8 }} {{ 2 is in items }} {{ flag is sameas true }} "
     "{{ flag is true }} {{ nothing is false }} {{ raise_exception is callable }} {{ 'abc' is lower }} "
     "{{ n is not string }} {{ n is equalto 7 }} {{ flag is not none }} {{ d.missing is defined }}"},
    // methods
    {"string_methods",
     "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ 'a,b,,c'.split(',') }}|"
     "{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ name.startswith('nu') }}|{{ name.endswith(('x', 'c')) }}|"
     "{{ name.upper() }}|{{ 'ABC'.lower() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|"
     "{{ name.replace('u', 'U') }}|{{ name.find('v') }}|{{ name.rfind('z') }}|{{ 'banana'.count('a') }}|"
     "{{ '-'.join(words) }}|{{ '{} and {name}'.format(1, name='x') }}|{{ 'a\\nb\\r\\nc'.splitlines() }}|"
     "{{ '123'.isdigit() }}|{{ 'ab'.isalpha() }}|{{ ' '.isspace() }}|{{ uni.find('日') }}"},
    {"dict_methods",
     "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.get('z') }} {{ d.get('q') }} "
     "{{ d.get('q', 'dflt') }} {% for k, v in d.items() %}{{ k }}{% endfor %} {{ items.index(2) }} {{ items.count(3) "
     "}}"},
    // loops
    {"loop_variables",
     "{% for i in items %}[{{ loop.index }} {{ loop.index0 }} {{ loop.revindex }} {{ loop.revindex0 }} "
     "{{ loop.first }} {{ loop.last }} {{ loop.length }} {{ loop.previtem }} {{ loop.nextitem }} "
     "{{ loop.cycle('a', 'b') }}]{% endfor %}"},
    {"loop_else_filter",
     "{% for i in [] %}x{% else %}empty{% endfor %} {% for i in items if i > 1 %}{{ i }}{{ loop.length }}{% endfor %} "
     "{% for p in people|selectattr('age', 'gt', 30) %}{{ p.name }}{% endfor %}"},
    {"loop_controls",
     "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% "
     "endfor %}"},
    {"loop_scoping",
     "{% set v = 'outer' %}{% for i in items %}{% set v = i %}{{ v }}{% endfor %} {{ v }} "
     "{% set ns = namespace(total=0, seen=[]) %}{% for i in items %}{% set ns.total = ns.total + i %}{% endfor %}{{ "
     "ns.total }}"},
    {"nested_loops",
     "{% for p in people %}{% for t in p.tags|default([]) %}{{ loop.index }}{{ t }}{% endfor %}{{ loop.index }}{% "
     "endfor %}"},
    {"unpacking", "{% for a, b in [(1, 2), [3, 4]] %}{{ a + b }} {% endfor %}{% set x1, y1 = 'ab' %}{{ y1 }}{{ x1 }}"},
    {"range", "{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }}"},
    // statements
    {"if_elif",
     "{% if n > 10 %}big{% elif n > 5 %}medium{% else %}small{% endif %} {% if nothing %}t{% else %}f{% endif %}"},
    {"set_block",
     "{% set block %}  Hi {{ name }}  {% endset %}[{{ block }}]{% set trimmed | trim | upper %}  x y  {% endset %}[{{ "
     "trimmed }}]"},
    {"macros",
     "{% macro greet(who, punct='!') %}Hello {{ who }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} "
     "{{ greet(punct='.', who='C') }}{% macro wrap() %}<{{ caller() }}>{% endmacro %} {% call wrap() %}inner{% endcall "
     "%}"
     "{% macro rest(a) %}{{ varargs }}{{ kwargs }}{% endmacro %} {{ rest(1, 2, 3, k=4) }}"},
    {"filter_block", "{% filter upper %}shout {{ name }}{% endfilter %}"},
    {"with_block", "{% with a = 1, b = 'two' %}{{ a }}{{ b }}{% endwith %}{{ a }}"},
    {"raw_block", "{% raw %}{{ not rendered }} {% if %}{% endraw %}"},
    {"comments", "a{# a comment #}b{#- trimmed -#}  c\n  {# own line #}\nd"},
    {"dict_namespace", "{% set ns = namespace(d) %}{{ ns.z }}{% set m = dict(a=1, b=2) %}{{ m }}"},
    // whitespace control as transformers configures it (trim_blocks, lstrip_blocks)
    {"whitespace_blocks",
     "line1\n  {% if true %}\n    body\n  {% endif %}\nline2\n{% for i in items %}\n  {{ i }}\n{% endfor %}\nend\n"},
    {"whitespace_markers",
     "a  {{- ' b ' -}}  c\n  {%- if true -%}  d  {%- endif -%}\n  e {%+ if true %}f{% endif +%}\ng\n\n"},
    {"whitespace_inline",
     "x {% if true %}y{% endif %} z\n\t{% set q = 1 %}\t tail\n{{ q }}  {% if true %}\n{% endif %}"},
    {"crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n"},
    {"whitespace_mixed",
     "{%- set a = 1 -%}\n  {#- c #}\n  {{ a }}\n  {%- macro m(x) %}\n    [{{ x }}]\n  {% endmacro -%}\n{{ m(2) }}\n"
     "  {% for i in items -%}\n  {{ i }},\n  {%- endfor %}\n{% if true %}  kept{% endif %}  \n  {{ 'v' }}  {% if true "
     "%}x{% endif %}\n"},
    {"whitespace_comment_lines", "a\n  {# note #}\nb\n{# one #}{# two #}\nc  {#- left #} d {# right -#}   e"},
    {"multiline_tag", "{{\n  name\n  | upper\n}}{%\n  if true\n%}!{% endif %}"},
    {"brace_strings", "{{ '}}' }}{{ \"{%\" }}{{ {'a': {'b': 1}} }}{{ '{' ~ '}' }}"},
    {"set_copy",
     "{% set a = [1] %}{% set b = a %}{{ b }}{% set t = (1, 2) %}{{ t }}{{ t[0] }}{% set a = a + [2] %}{{ a }}{{ b }}"},
    {"conditional_chain",
     "{{ 'a' if n > 10 else 'b' if n > 5 else 'c' }} {{ (items|length > 2) and 'long' or 'short' }}"},
    {"namespace_print",
     "{% set ns = namespace(a=1) %}{{ ns.a }} {{ ns.b is defined }} {% set ns.b = [ns.a] %}{{ ns.b }}"},
    {"previtem_first", "{% for i in items %}{{ loop.previtem }}|{{ loop.previtem is defined }};{% endfor %}"},
    {"filters_after_tests",
     "{{ (n is odd)|string|upper }} {{ items|map('string')|join('-') }} {{ d|length }} {{ people|length }}"},
    {"int_float_mix",
     "{{ 1 + 1.0 }} {{ 3 * 1.0 }} {{ 4 / 2 }} {{ 4 // 2.0 }} {{ 2 ** 0.5 }} {{ true + true }} {{ n - 2.5 }} {{ 1e3 }} "
     "{{ 1_000 }}"},
    {"string_compare_unicode", "{{ 'é' > 'z' }} {{ ['b', 'a']|sort }} {{ 'ß'|upper }}{{ 'Ärger'|lower }}"},
    {"recursive_loop",
     "{% set tree = [{'n': 'a', 'c': [{'n': 'b', 'c': [{'n': 'c', 'c': []}]}]}, {'n': 'd', 'c': []}] %}"
     "{% for t in tree recursive %}<{{ loop.depth }}{{ t.n }}{{ loop(t.c) }}>{% endfor %}"},
    {"loop_changed", "{% for i in [1, 1, 2, 2, 1] %}{{ loop.changed(i) }} {% endfor %}{{ loop is defined }}"},
    {"generation_block", "a{% generation %} gen {{ n }} {% endgeneration %}b"},
    {"leading_whitespace", "   {% if true %}x{% endif %}\n   {{ 'y' }}"},
    {"macro_helpers",
     "{%- macro render(j, handled) -%}{%- if j is mapping -%}{%- for k, v in j|items if k not in handled -%}\n"
     "{{ k }}: {{ v|tojson if v is not string else v }}{%- endfor -%}{%- endif -%}{%- endmacro -%}"
     "{{ render({'x': [1], 'y': 's', 'z': none}, ['z']) }} {{ d.keys()|reject('in', ['z'])|list }}"},
    {"tool_schema_walk",
     "{% for name, spec in {'a': {'type': 'string'}, 'b': {'type': 'integer', 'enum': [1, 2]}}.items() %}"
     "{{ name }}:{{ spec.type|upper }}{% if spec.enum is defined %}{{ spec.enum|join('|') }}{% endif %};{% endfor %}"},
    {"namespace_lists",
     "{% set ns = namespace(items=[]) %}{% for i in items %}{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.items "
     "}}"},
    {"more_formats",
     "{{ '%s'|format([1]) }} {{ '%.3s'|format('abcdef') }} {{ '%05d'|format(42) }} {{ '%x'|format(255) }} "
     "{{ '%e'|format(12345.678) }} {{ '%5.2f|%-4d|%r'|format(3.14159, 7, 'a') }}"},
    {"float_forms",
     "{{ 1.5e300 }} {{ 1e-5 }} {{ 123456789012345678.0 }} {{ 0.000123 }} {{ 3 // 0.5 }} {{ -3 % 0.7 }} {{ 2 ** 62 }} "
     "{{ 1e300 * 1e10 }} {{ -0.5|round }} {{ 1.5|round }} {{ 2.5|round }}"},
    {"json_controls",
     "{{ '\\u2028\\x7f\\x00'|tojson }} {{ ['\\x00', '\\u00a0'] }} {{ [[]]|tojson(indent=2) }} {{ nothing[0] }}|"},
    {"self_containing_namespace", "{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }} {{ [ns] }}"},
    {"python_corners",
     "{{ 2.5 is odd }} {{ 4.0 is even }} {{ 7|round }} {{ 1250|round(-2) }} {{ true|round }} {{ (1, 'x') is lower }} "
     "{{ 1e20 is lower }} {{ 'ABC1' is upper }} {{ 5[0] }}|{{ nothing[0] }}|"},
    // undefined semantics
    {"undefined",
     "[{{ nope }}] [{{ nope|length }}] [{{ nope|list }}] [{% for i in nope %}x{% endfor %}] [{{ nope is defined }}] "
     "[{{ nope ~ 'x' }}] [{{ nope == nope }}] [{{ 'a' in nope }}] [{{ nope|trim }}] [{{ d.nope|default('dd') }}]"},
};

// Snippets that fail in Jinja2; nuvec must fail with the same message.
const Snippet failing[] = {
    {"undefined_attribute", "{{ nope.attr }}"},
    {"undefined_add", "{{ nope + 1 }}"},
    {"missing_attribute_call", "{{ d.missing.deeper }}"},
    {"str_plus_int", "{{ 'a' + 1 }}"},
    {"filter_binds_tighter", "{{ 1 + 2 | string }}"},
    {"none_plus_str", "{{ nothing + 'x' }}"},
    {"division_by_zero", "{{ 1 / 0 }}"},
    {"raise_exception", "{{ raise_exception('custom failure: ' ~ n) }}"},
    {"unsafe_append", "{% set l = [] %}{{ l.append(1) }}"},
    {"tojson_undefined", "{{ nope|tojson }}"},
    {"bad_unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}"},
    {"namespace_assign", "{% set s.x = 1 %}"},
    {"call_non_callable", "{{ n() }}"},
    {"big_range", "{{ range(1000000)|length }}"},
    {"slice_none", "{{ nothing[1:] }}"},
    {"slice_dict", "{{ d[1:] }}"},
    {"slice_bad_bound", "{{ items['a':] }}"},
    {"int_of_undefined", "{{ nope|int }}"},
    {"list_in_dict", "{{ [1] in d }}"},
    {"indent_non_string", "{{ 3.0|indent(2) }}"},
    {"unknown_filter", "{{ n|no_such_filter }}"},
    {"unknown_test", "{{ n is no_such_test }}"},
    {"loop_not_recursive", "{% for i in items %}{{ loop([1]) }}{% endfor %}"},
    {"none_length", "{{ nothing|length }}"},
    {"empty_list_index", "{{ messages[0].role }}"},
};

std::vector<ReferenceCase> snippet_cases() {
  std::vector<ReferenceCase> cases;
  auto variables = ordered_json::parse(variables_json);
  auto add = [&](const std::string& prefix, const Snippet& s) {
    ReferenceCase c;
    c.name = prefix + s.name;
    c.source = s.source;
    c.messages = ordered_json::array();
    c.options.extra = variables;
    cases.push_back(std::move(c));
  };
  for (const Snippet& s : snippets) {
    add("snippet/", s);
  }
  for (const Snippet& s : failing) {
    add("failing/", s);
  }
  return cases;
}

const bool registered = register_cases(snippet_cases);

TEST(Jinja, SnippetsMatchJinja2) {
  ASSERT_TRUE(registered);
  if (!reference().skip.empty()) {
    GTEST_SKIP() << reference().skip;
  }
  expect_all_agree("snippet/", snippet_cases());
}

TEST(Jinja, FailuresMatchJinja2) {
  if (!reference().skip.empty()) {
    GTEST_SKIP() << reference().skip;
  }
  const Reference& ref = reference();
  for (const ReferenceCase& c : snippet_cases()) {
    if (c.name.rfind("failing/", 0) != 0) {
      continue;
    }
    EXPECT_FALSE(ref.results.at(c.name).ok) << c.name << " renders in Jinja2";
  }
  expect_all_agree("failing/", snippet_cases());
}

std::string error_of(const std::string& source, const ordered_json& extra = ordered_json::object()) {
  try {
    ChatTemplateOptions options;
    options.extra = extra;
    ChatTemplate(source).render(ordered_json::array(), options);
  } catch (const nuvec::error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Jinja, ErrorsNameTheTemplateLine) {
  EXPECT_EQ(error_of("a\nb\n{{ raise_exception('stop here') }}"), "chat template error at line 3: stop here");
  EXPECT_EQ(error_of("{% for m in messages %}\n{% endfor %}\n\n{{ x.y }}"),
            "chat template error at line 4: 'x' is undefined");
  EXPECT_EQ(error_of("\n{% if true %}\n  {{ 1 + }}\n{% endif %}"),
            "chat template syntax error at line 3: unexpected end of print statement");
  EXPECT_EQ(error_of("{% if true %}\n\nno end"),
            "chat template syntax error at line 3: unexpected end of template, expected 'endif'");
  EXPECT_EQ(error_of("x\n{% break %}"), "chat template syntax error at line 2: 'break' outside of a loop");
  EXPECT_EQ(error_of("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"),
            "chat template error at line 1: maximum recursion depth exceeded");
  EXPECT_EQ(error_of("{{ 'a' * 1000000000000 }}"), "chat template error at line 1: repeated string is too long");
  EXPECT_EQ(error_of("{{ 10 ** 20 }}"),
            "chat template error at line 1: integer overflow: the result does not fit in 64 bits");
}

TEST(Jinja, ContentPartsAndTools) {
  ChatTemplate t(
      "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}"
      "{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %}{% endfor %}{{ tools|length }}{{ documents is none "
      "}}");
  ChatTemplateOptions options;
  options.tools = ordered_json::parse(R"([{"type": "function"}])");
  auto messages = ordered_json::parse(R"([{"content": "a"}, {"content": [{"type": "text", "text": "b"}]}])");
  EXPECT_EQ(t.render(messages, options), "ab1True");
}

}  // namespace
}  // namespace nuvec::lm::testing
