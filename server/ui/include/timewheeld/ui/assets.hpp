//
// timewheeld/ui/assets.hpp
//
// The dashboard's files as compiled into timewheeld (server/ui/static/, embedded at build
// time by server/ui/embed_ui.cmake): looked up by name, never read from disk, so the
// binary serves exactly what was built and tested, and no path a client sends can reach
// anything else.
//
#ifndef TIMEWHEELD_UI_ASSETS_HPP
#define TIMEWHEELD_UI_ASSETS_HPP

#include <string_view>

namespace timewheeld::ui {

/// One file of the dashboard.
struct asset {
    std::string_view name;         ///< its path under /ui/: "index.html", "app.js"
    std::string_view content_type; ///< from its extension: "text/javascript; charset=utf-8"
    std::string_view etag;         ///< a strong ETag, quoted: a digest of the content
    std::string_view body;         ///< the file, byte for byte
};

/// The file called `name` (a path under /ui/, compared exactly: no decoding, no "..", no
/// index), or nullptr when there is none.
const asset* find_asset(std::string_view name) noexcept;

} // namespace timewheeld::ui

#endif // TIMEWHEELD_UI_ASSETS_HPP
