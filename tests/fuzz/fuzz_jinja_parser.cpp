// Fuzz target: any byte string handed to the Jinja lexer/parser must either parse into a
// tree or raise TemplateError — never crash, hang, overflow the stack or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chat/jinja_error.h"
#include "chat/jinja_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    sft::jinja::NodeList body = sft::jinja::parse_template(source);
    (void)body;
  } catch (const sft::jinja::TemplateError&) {
    // Rejected with a located syntax error: the expected outcome for most inputs.
  }
  return 0;
}
