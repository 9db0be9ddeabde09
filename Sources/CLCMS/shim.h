// LittleCMS 2 (Debian's liblcms2-dev), for colour management. Its errors go to a handler that returns
// (set per context), never longjmp, so Swift calls it directly.
#ifndef WEBIMAGE_CLCMS_SHIM_H
#define WEBIMAGE_CLCMS_SHIM_H
#include <lcms2.h>

#endif
