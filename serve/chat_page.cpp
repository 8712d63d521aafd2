#include "serve/chat_page.h"

namespace zt::serve {

std::string_view chat_page_html() {
  // serve/CMakeLists.txt writes chat_page.html as a raw string literal into this include.
  static constexpr std::string_view kPage =
#include "zerotune/chat_page_html.inc"
      ;
  return kPage;
}

}  // namespace zt::serve
