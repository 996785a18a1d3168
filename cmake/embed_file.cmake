# Writes OUT: a C file defining `const char SYMBOL[]`, the bytes of FILE followed by a
# NUL. A FILE ending in .json must parse as JSON, so a broken document fails the build
# rather than the first request that serves it.
file(READ ${FILE} text)
if(FILE MATCHES "\\.json$")
  string(JSON kind ERROR_VARIABLE err TYPE "${text}")
  if(err)
    message(FATAL_ERROR "${FILE} is not valid JSON: ${err}")
  endif()
endif()
file(READ ${FILE} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
get_filename_component(name ${FILE} NAME)
file(WRITE ${OUT}.tmp "/* generated from ${name} by cmake/embed_file.cmake */\nconst char ${SYMBOL}[] = {${hex}0x00};\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
