// HTML/XML escaping of text, as markupsafe.escape (jinja2's `escape` / `e` filter) does it:
// & < > " ' become &amp; &lt; &gt; &#34; &#39;, every other byte is copied as is (UTF-8
// passes through untouched). The one escape for the chat templates' filter and the SVG
// curve plots: its output is safe inside element text and inside either kind of quoted
// attribute.
#pragma once

#include <string>
#include <string_view>

namespace sft {

std::string html_escape(std::string_view text);

}  // namespace sft
