#!/usr/bin/env python3
"""Fetch 100 real photographs for the imgproxy-style benchmark workload (imgproxy's benchmark workload).

The photographs come from Debian 12 (bookworm) packages only: each package is
fetched with `apt-get download` (no root needed when the apt lists are present),
unpacked with `dpkg-deb -x`, and a fixed list of files (ENTRIES below, picked by
hand and checked to be real photographs, not renders or drawings) is taken from it.
Every picture is
  * rotated by its EXIF orientation (if any), converted to sRGB (embedded ICC
    profiles are applied), flattened to RGB,
  * scaled down with Lanczos to fit into 2040x1400 keeping its aspect ratio
    (never scaled up; no cropping), like the ~2040x1400 photos of imgproxy's
    published benchmark,
  * written as photo-000.jpg ... photo-099.jpg, baseline JPEG q95, 4:2:0,
    with no EXIF, XMP or ICC data.
OUTDIR/manifest.json records where each photo came from (package, version, path,
licence, sha256 of the source and the output); OUTDIR/licenses/ gets each package's
debian/copyright file.  A second run with an up-to-date manifest does nothing.

Usage: fetch_photos.py OUTDIR [--cache DIR] [--strict] [--force] [--keep-temp]
Needs: python3 with Pillow, apt-get, dpkg-deb.  Downloads about 640 MiB of .deb
files (enlightenment-data alone is 382 MiB); --cache DIR keeps them for reuse.
"""
import argparse
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from PIL import Image, ImageCms, ImageOps

SCRIPT_VERSION = 1
BOX = (2040, 1400)
JPEG_QUALITY = 95
JPEG_SUBSAMPLING = "4:2:0"

# Package -> version the list was made from (Debian 12 bookworm).  If that version
# is no longer served, the current candidate is used and the source checksums below
# tell whether the pictures changed.
PACKAGES = {
    'enlightenment-data':          '0.25.4-2',
    'lomiri-wallpapers-16.04':     '20.04.0-2',
    'lomiri-wallpapers-20.04':     '20.04.0-2',
    'lxqt-themes':                 '1.2.0-1',
    'mate-backgrounds':            '1.26.0-1',
    'plasma-workspace-wallpapers': '4:5.27.5-2',
    'lifeograph':                  '2.0.3-1',
    'zoph':                        '1.0.1-3',
    'krank':                       '0.7+dfsg2-4',
}

ENTRIES = [
    # (package, path inside the package ["FILE.edj::member" = JPEG stored in an Eet file], licence, sha256 of the source bytes)
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Bamboo.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'd8d003f6ebb4437bac4a579eadef7fdf4aae0144e443edd444c8af61bff17809'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Foggy-Trees.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     '6a1934df4d3d0d4cfc654bb125a9322b49188dabc519dd918a9fa71ef5c6ee0c'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/God-Rays.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'cb871506ee3d339d26bf382c5c9e98f1fa749bd99d7e5b6cb3a4cb849d50354d'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Green-Maple.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     '4db2abb44fb3dec55f18fc4e4eb0f72e4af9fe7af9cce1d5573f926e49811b0e'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Lichen-Branches.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     '08c9e543b99ec73ff73203bcfc5b8c3f9f0ec9c3aa2e8e94fdb2a640e5f6179a'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Mountain.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'dcbef7e92cc196474f3b4eabf80b45a4dab0bdf8066deaf9ef565048bb72f8bb'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Peaks.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     '4fea206973cdc79c91fa8045eb9201696f91f627c1b6760da0bed766e0a85549'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Red-Maple.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'bb6097ffef927fb219f7225da09df55ce2110a8c2b636d6e387802b9c1bf567e'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Sea-of-Lanterns.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'e1a4db127d62346f2e7930abb5770caebe7ce6257afa7bc842a1e79a8dac4fe4'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Snow-Trees.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     '3671426df1713ecd0165679ca5023eb5ad631d0c5a1b58386722cb020dc6f3cb'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Spruce-Needles.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'fa3f06176b8c1ffc57964912c1faf512c845278f6d95addf6e4f0f56ef643d7e'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Sunset-Clouds.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'c99581ba894a81cc0169cc2b2656f80d0f7884787368ff21a15ac539af0ffd08'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/White-Flower.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     'a55797bf0a107c1f64725ec3a6d5cefcd617730831ec230bf16398e0a7100c46'),
    ('enlightenment-data', 'usr/share/enlightenment/data/backgrounds/Yellow-Flower.edj::edje/images/0',
     'BSD-2-clause (Carsten Haitzler and contributors)',
     '00b486e183927954465f42122b9462bcfebc0474d10ab790323d0e1cfe10fd9c'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/Bridge_by_Sander_Klootwijk.jpg',
     'CC-BY-SA-4.0 (2018 Sander Klootwijk)',
     'bd86b081f9975e2b83527f71e49b9271a8ab40885428395969d9f7d834d7f050'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/Dragonfly_by_Bolly.jpg',
     'CC-BY-SA-4.0 (2018 "Bolly")',
     'af5af17841009732def24b09bb1e669a1b09d2b4bdeee7812c371101c30d2bb3'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/Picture_0B_by_freespace.jpg',
     'CC-BY-4.0 (2018 Trevor "Freespace")',
     'c8c0ab18e48d9e0419fe42881112137f3afafc27dfddc29ec3a6d54c56d225ad'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/Wine_by_Jakkub_Mede.jpg',
     'CC-BY-4.0 (2018 Jakub Mede)',
     'd2e96e6d4da40dd804b3d0ce295e94de04a2d7d9b6785d42cd9d92ba58bced74'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/aitzgorri_by_Aitzol_Berasategi.jpg',
     'CC-BY-4.0 (2018 Aitzol Berasategi)',
     '66268e7b48f8854d36a28765fac6e23ec1aee251daa6da1f64715f201020ad36'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/free_by_Peter_Nerlich.jpg',
     'CC-BY-SA-4.0 (2018 Peter Nerlich)',
     '85a5453c2fed514c75973016f3d862aca62eb7ca087618822469274ac1092373'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/friends_by_Aitzol_Berasategi.jpg',
     'CC-BY-4.0 (2018 Aitzol Berasategi)',
     'cc40e313c74e421edffe3403def413c16878ce14661cce7ec5915baeab35538d'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/greentock_by_Peter_Nerlich.jpg',
     'CC-BY-SA-4.0 (2018 Peter Nerlich)',
     'e7b20e2db9dcd6e2b278ca55873c2110b35d89cd38b04d0b18728726888e6889'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/life_by_Aitzol_Berasategi.jpg',
     'CC-BY-4.0 (2018 Aitzol Berasategi)',
     '4c119350ead80201fe256850c3d316309ddfb4bdf10b235ce982dcde0c667c05'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg',
     'CC-BY-4.0 (2018 Aitzol Berasategi)',
     '414d0072b2f6f2c555deafeaef6e45c4fed6fa9ad26eba6560ca8803959cf97a'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/seeding_by_Clements_Engelhardt.jpg',
     'CC0-1.0 (2018 Clemens Engelhardt)',
     'a5634d1ab5e41a3568e92d4a894a500c92b891f9ff734e50bd224d6e185a605f'),
    ('lomiri-wallpapers-16.04', 'usr/share/backgrounds/sunset_by_Aitzol_Berasategi.jpg',
     'CC-BY-4.0 (2018 Aitzol Berasategi)',
     '474dab6a4b9f94dc76c29dfe30e9f5db4af0fd2e33fe5d695f8152b371efca18'),
    ('lomiri-wallpapers-20.04', 'usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg',
     'CC-BY-SA-3.0 (2021 Lukas Baubkus)',
     '6572410c09f4492c74ccadde133565a14c0161617d5917d4c820c66d65a44ba7'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/Butterfly-Kenneth-Wimer.jpg',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     'c237c26f6f0b18db3afa62a0eff13cb8208b79a1ef35aaadcb745d8f9faef146'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/Valendas.png',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     'f2d275c51d116942cea8e7d80d30c7d3c130349a0695caf2aa235f926ae15759'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/after-the-rain.jpg',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     'e6cb8b3e09b904cc493ff17fddcd564d4e46a1761d05adf972c285a1fd878234'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/appleflower.png',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     'bae8a8eb8274b29509f1cbbfe250081331c5704a1fea25d5052166a0451e67f3'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/beam.png',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     '3d199194b048cb793c0ad558337cda3e16f14cd054168d1d813620e24a0a5659'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/butterfly.png',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     '13175434d99075e075de7321942e66169e3c99ac9416024dcf4123bd3b38749c'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/cloud.png',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     '522dbf79dfaff751cf8ef2f337c9d196a231fa096bc38806a76ce048b8c7b5a2'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/drop.png',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     '3b726aea9a6f8af36431c6f1974f982f7f4c5a4443499500bda31be27e4ffde8'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/flowers.png',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     '3a935d8be4d6c9784f9079ff2814acd2de2c8406e9fe584be03e90264f37c371'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/fog.jpg',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     'a8235344ee6b5ab1b6de3ccef731bcc0e6509cf33ce832db87eae1eb75987083'),
    ('lxqt-themes', 'usr/share/lxqt/wallpapers/this-is-not-windows.jpg',
     'LGPL-2.1+ per debian/copyright; upstream wallpapers/License: CC-BY-SA-3.0 (LXQt team)',
     '2d885e0438c0ab244f818d33d8f745a1cc486558462faf9bf3948675c68ac227'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/Aqua.jpg',
     'GPL-2+ (Charles Barbin)',
     '5c30118205982da441bf7e6a1ada636a8a0be879408140b3148280c665ed6bce'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/Blinds.jpg',
     'GPL-2+ (Lennart Poettering, Andrea Cimitan)',
     'f7aac0dcc2e06d0491643e84df3da1d9db7c4610f58806a880d56e074799f600'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/Dune.jpg',
     'GPL-2+ (Marco Cogoni, Hylke Bons)',
     '8a67c2cb0be8c46b70c237311a4fa4d2b4ac7d39568135384787801fa5cc9a91'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/FreshFlower.jpg',
     'GPL-2+ (Jens Ansorg)',
     '972b0a0c4e5e3fa93f4f244fc84bc64b121a5eac3aaa5856f1308c1f38a02f8e'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/Garden.jpg',
     'GPL-2+ (Charles Barbin)',
     'd3095ee09d425ef23d27155412136cf14fc3c9af76ca58b452f55e23da324e78'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/LadyBird.jpg',
     'GPL-2+ (Charles Barbin)',
     'e35a9a4126ef969c90b29c038058c5a575a20eadd84106a37bf1fa9931e7b61d'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/RainDrops.jpg',
     'GPL-2+ ("blackcombwhistler07")',
     '3e4ea9671c28c90a86cf67b3db9daf18c4741587c596333a7529ca589aaa0c16'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/Storm.jpg',
     'GPL-2+ (Sergey Nazarov)',
     '77ca53077831d3237f73393a91fc879158abc046d852941c26e90de336356957'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/TwoWings.jpg',
     'GPL-2+ (Charles Barbin, Hylke Bons)',
     '665e5abf8a5399070a91a9a8e455fe071e5b61697ff78fdeda4e9843ef545aeb'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/Wood.jpg',
     'GPL-2+ (Jean-Francois Fortin Tam)',
     '19c78500ac00a622e19907ab9cc7d06d46fe08c4a6142759a84195696150ec07'),
    ('mate-backgrounds', 'usr/share/backgrounds/mate/nature/YellowFlower.jpg',
     'GPL-2+ (Charles Barbin)',
     '254da96256acb7add685679775a04d1e4a5bc8cd13e5a5a3d61351ce198a5306'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/BytheWater/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Maciej Wiklo)',
     'c272434ef39f2abf1ed48a15a8910088020f3165329a5092f3940ec9464bc05f'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/ColdRipple/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Risto Saukonpaa)',
     '05bef6722fc0ed81292cceb3ed026c38d17e510f3c84be7d68610c2b1a723c3f'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/ColorfulCups/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Dmitri Popov)',
     '6e0f3a72feb5a4a9fec191b77e34874c3c69e2d93040deb3f07773e73385023d'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/DarkestHour/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Risto Saukonpaa)',
     '8e3703fae3a3c217b1fc2b399b706cd3720584268d071ba153e4809daa55f1ce'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/EveningGlow/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Ian Hex)',
     '586682dcb362b9f620068f10138f87d0d3649939aef238adc5807cb951976a7a'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/FallenLeaf/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Martin Klapetek)',
     '95603a6560c7e8d50e0e03b3f4adbe39c5258c72528e74e4ecaea1daf4e499de'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/Grey/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Sigi Sagi)',
     '88c31d8944b7e6935d1b9a296654c692f0772cb512491713eb30a972a604c0ed'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/OneStandsOut/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Risto Saukonpaa)',
     'cb507baf1dafdcae362264f3aba9483ed4be5f6c9fdd770f0ec0920c6d9e80fd'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/Path/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Risto Saukonpaa)',
     '7477457d7f17b736259f1b021864778ad4ba802cf3214e6728181ff29126bba8'),
    ('plasma-workspace-wallpapers', 'usr/share/wallpapers/summer_1am/contents/images/2560x1600.jpg',
     'GPL-2+ per debian/copyright; metadata: LGPLv3 (Risto Saukonpaa)',
     'c868b50789591dd42910153c768053f1ba0a98cb36bbfc2b7a96a1045d0477f8'),
    ('lifeograph', 'usr/share/net.sourceforge.Lifeograph/backgrounds/cloister.jpg',
     'GPL-3+ (2007-2022 Ahmet Oeztuerk)',
     '696a65b2c134f9a9bc719fbfe3bc3ef32d941c5dfc9cfd3519beb94645650f72'),
    ('lifeograph', 'usr/share/net.sourceforge.Lifeograph/backgrounds/fog.jpg',
     'GPL-3+ (2007-2022 Ahmet Oeztuerk)',
     '6ed0f1b0f42c76da4fa4d64d4e3620fb8930d89f83fa127648476b39d90cdde6'),
    ('lifeograph', 'usr/share/net.sourceforge.Lifeograph/backgrounds/horizon.jpg',
     'GPL-3+ (2007-2022 Ahmet Oeztuerk)',
     '2858fa4610cb6454ba9c42deaf55f2a0e4559149faaf9d8a8508906fc3555e57'),
    ('lifeograph', 'usr/share/net.sourceforge.Lifeograph/backgrounds/pier.jpg',
     'GPL-3+ (2007-2022 Ahmet Oeztuerk)',
     '3001eae11fb626f25ebd8aaf0a43b940567156a38f7a2e66aa67328bb88ee24d'),
    ('lifeograph', 'usr/share/net.sourceforge.Lifeograph/backgrounds/sands.jpg',
     'GPL-3+ (2007-2022 Ahmet Oeztuerk)',
     '1fb393bac6a48201267d9becd86a0c5c588e40a532ac575291397a9801f09f87'),
    ('lifeograph', 'usr/share/net.sourceforge.Lifeograph/backgrounds/snow.jpg',
     'GPL-3+ (2007-2022 Ahmet Oeztuerk)',
     '2b0d1a025838a5e479745aefec6727859cbbcc65e23e28b0d05f1db6388fb6fe'),
    ('lifeograph', 'usr/share/net.sourceforge.Lifeograph/backgrounds/street.jpg',
     'GPL-3+ (2007-2022 Ahmet Oeztuerk)',
     'f028446cf1600d36e83aaff0af850e7a20d26caebe86ed220ac89a8bbd157391'),
    ('zoph', 'usr/share/zoph/www/php/templates/default/images/backgrounds/fir.jpg',
     'GPL-2+ (2002-2015 Jason Geiger)',
     '9c8b114d31b090c4f62b69d40e040a0e17394a69b0d03a71bc30767e0a1c3aaa'),
    ('zoph', 'usr/share/zoph/www/php/templates/default/images/backgrounds/flower.jpg',
     'GPL-2+ (2002-2015 Jason Geiger)',
     '6ff0fd76747f1aed4a90bca97126108e395cf369bb648bd50e6c648961dfcb41'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-01.jpg',
     'public domain (images by Slava Anishenko)',
     '00c3a08cb6e9fab69d9e3ed4a866619f88f04ca72154914c4292f50733bd7ae1'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-02.jpg',
     'public domain (images by Slava Anishenko)',
     '624d0ecc468bd05ced63df23a2c089357cc182273ae8d71273c6f46645f0cee8'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-03.jpg',
     'public domain (images by Slava Anishenko)',
     '1e61cdbd96e7b651fa057f1223ed30197a7f3b59b778fd2ed393b516ced17248'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-04.jpg',
     'public domain (images by Slava Anishenko)',
     '50c2821745445c3bfc60653cd8579b36faba5ce232afaaf2f560a5f5e72ca054'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-05.jpg',
     'public domain (images by Slava Anishenko)',
     '36d644fd7f345e8422916620b55ab9380b62f6003a6e6fdf99a1d69762162d68'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-06.jpg',
     'public domain (images by Slava Anishenko)',
     '33a3035558b56e3859661cb669ee3e5b1e0ad42d42e7f9a492892be724cacc20'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-07.jpg',
     'public domain (images by Slava Anishenko)',
     'a2e7a90eac247d24e5fff4fede7aedf6e834e9bea2783b30756cd3470f56b4d0'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-08.jpg',
     'public domain (images by Slava Anishenko)',
     '69254e2dd3fa0892a9358b1e6141e2be824c7649cd37eaece4394547623aa78e'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-09.jpg',
     'public domain (images by Slava Anishenko)',
     '514ce56b700ceb2c6b825dd8d2547937c5962e6c98b67a561f9ad42f2c2c4772'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-10.jpg',
     'public domain (images by Slava Anishenko)',
     '88423eb052a0b0d5048065b109c75f273e4801222b8d9e0a1a90f5b44128da3d'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-11.jpg',
     'public domain (images by Slava Anishenko)',
     'e4eafa6c5565629d9be526a8b35299ab83e46478198bff6fd3913966c2e20183'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-12.jpg',
     'public domain (images by Slava Anishenko)',
     'e4e8ca9795166dda21f23bd616007c6deac0630420c9064dee0ef201dba01bb4'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-13.jpg',
     'public domain (images by Slava Anishenko)',
     'a1e7ae65be423f81841a39282e2d24f8d78494a6719bee0277e59c0493bf86ab'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-14.jpg',
     'public domain (images by Slava Anishenko)',
     '2fd330aef84cf6af71a920b45613b3e2eeb466eaa8feb292f136e3e68627136c'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-15.jpg',
     'public domain (images by Slava Anishenko)',
     'cf6b2bd1794077067c6390534586899585ad48e585da0902144618668ceeef9a'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-16.jpg',
     'public domain (images by Slava Anishenko)',
     '583bc18a7b2ab806a56fc190669b4bfb7883be66edc9453dde989b438931d9f5'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-17.jpg',
     'public domain (images by Slava Anishenko)',
     '915b5e92157ce5ad69eb61d23f79810a5944872d5e96e06889279d972563b6a4'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-18.jpg',
     'public domain (images by Slava Anishenko)',
     '30db823429ed328933763df64c4b409a5be0a09c6c42056bed6b1210e690ba41'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-19.jpg',
     'public domain (images by Slava Anishenko)',
     '48e8877da154998bcbe3a438c67e523c9c50d7959a1d4e47e13f592b87e6d355'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-20.jpg',
     'public domain (images by Slava Anishenko)',
     'cb8d3517ef20bf18aea28526122fc5617866206859a325c0c98feeb229a26c09'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-21.jpg',
     'public domain (images by Slava Anishenko)',
     '9250ac091a488e8618a07cdadec95292a47cc9d0f3dde6ec410bd036c19e4762'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-22.jpg',
     'public domain (images by Slava Anishenko)',
     '81a105b40485add16ecc2470d54847bc0fd94d12eab8e3d187fbeb6537adf4af'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-23.jpg',
     'public domain (images by Slava Anishenko)',
     'c79337edb27142dc0c1b85f56ad2e5751673296111e8cb66fa4abbb739f6c5c5'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-24.jpg',
     'public domain (images by Slava Anishenko)',
     '04ff391d39a923c528790a0a0a2e976ed5ac5c7aa8b06669ae7f61ec78bd20c8'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-25.jpg',
     'public domain (images by Slava Anishenko)',
     'bfe7a90315e6b5e624c357062f327376bfe223fe5d917f164a984bf068cba5a2'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-26.jpg',
     'public domain (images by Slava Anishenko)',
     '3144a5c457769be4506c82986344c0a48c25358425f9b9c1197bbe568c880ef9'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-27.jpg',
     'public domain (images by Slava Anishenko)',
     '66c304ab249e6d454b0723c77de12b067a6b969b31a1ba999c4074d80db05e05'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-28.jpg',
     'public domain (images by Slava Anishenko)',
     'a3a89d6e6d1c99d644ffa41bf46974f3c5d32da61815f02c51d615b802a02026'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-29.jpg',
     'public domain (images by Slava Anishenko)',
     '47e1a4dbce964b8a433a00adb281649168159d7ec8c7f333a80ef4ca09234a42'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/level-30.jpg',
     'public domain (images by Slava Anishenko)',
     '8ea3ff2aaa73652a0f07573683034090d3ac4c57d284faa885e5f55e032c2ec6'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/bonus-01.jpg',
     'public domain (images by Slava Anishenko)',
     '1b35cfa3fb66c4a8d45caafec68bd89c324703149864bdf9a899922cffb5a513'),
    ('krank', 'usr/share/games/krank/levels/unera-backgrounds/menu.jpg',
     'public domain (images by Slava Anishenko)',
     '79a90ea68131b945c1b6dfa9d71bb215d19e075905d9832cae9d692928dfe9a9'),
]

MIN_LONG_SIDE = 1600


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def spec_hash():
    spec = {"version": SCRIPT_VERSION, "box": BOX, "quality": JPEG_QUALITY,
            "subsampling": JPEG_SUBSAMPLING, "packages": PACKAGES, "entries": ENTRIES,
            "pillow": Image.__version__}
    return sha256(json.dumps(spec, sort_keys=True).encode())


def out_name(i):
    return "photo-%03d.jpg" % i


def up_to_date(outdir, want_hash):
    """True when OUTDIR holds a manifest for this exact list and every photo it lists."""
    try:
        with open(os.path.join(outdir, "manifest.json")) as f:
            man = json.load(f)
    except (OSError, ValueError):
        return False
    if man.get("spec_sha256") != want_hash or len(man.get("photos", [])) != len(ENTRIES):
        return False
    for p in man["photos"]:
        path = os.path.join(outdir, p["file"])
        if not os.path.isfile(path) or os.path.getsize(path) != p["bytes"]:
            return False
        if file_sha256(path) != p["sha256"]:
            return False
    return True


# ---------------------------------------------------------------- Debian packages

def deb_fields(deb):
    out = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Version"], check=True,
                         capture_output=True, text=True).stdout
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return fields.get("Package"), fields.get("Version")


def find_deb(folder, name, version=None):
    for f in sorted(os.listdir(folder)):
        if f.startswith(name + "_") and f.endswith(".deb"):
            path = os.path.join(folder, f)
            pkg, ver = deb_fields(path)
            if pkg == name and (version is None or ver == version):
                return path
    return None


def apt_download(specs, folder):
    """apt-get download SPECS into FOLDER; True on success."""
    log("apt-get download " + " ".join(specs))
    return subprocess.run(["apt-get", "download", "-q", *specs], cwd=folder).returncode == 0


def fetch_debs(folder):
    """Return {package: (deb path, version)}, downloading what FOLDER lacks."""
    os.makedirs(folder, exist_ok=True)
    missing = [n for n, v in PACKAGES.items() if not find_deb(folder, n, v)]
    if missing and not apt_download(["%s=%s" % (n, PACKAGES[n]) for n in missing], folder):
        updated = False
        for n in missing:  # one by one: pinned version, then the current candidate
            if find_deb(folder, n, PACKAGES[n]) or apt_download(["%s=%s" % (n, PACKAGES[n])], folder):
                continue
            log("warning: %s %s is not served; trying the current version" % (n, PACKAGES[n]))
            if apt_download([n], folder):
                continue
            if os.geteuid() == 0 and not updated:
                log("apt-get download failed; running apt-get update once")
                subprocess.run(["apt-get", "update", "-q"], check=True)
                updated = True
                if apt_download(["%s=%s" % (n, PACKAGES[n])], folder) or apt_download([n], folder):
                    continue
            sys.exit("error: cannot download %s (run 'apt-get update' as root first?)" % n)
    debs = {}
    for n, v in PACKAGES.items():
        path = find_deb(folder, n, v) or find_deb(folder, n)
        if not path:
            sys.exit("error: no .deb for %s after download" % n)
        debs[n] = (path, deb_fields(path)[1])
    return debs


# ---------------------------------------------------------------- Eet (.edj) files

EET_MAGIC_FILE2 = 0x1EE70F42


def eet_read(path, member):
    """Bytes of an uncompressed, unciphered entry of an Eet v2 file (Enlightenment's
    .edj backgrounds keep the original JPEG there as edje/images/N)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, n_dir, _n_dict = struct.unpack(">III", data[:12])
    if magic != EET_MAGIC_FILE2:
        raise ValueError("%s: not an Eet v2 file" % path)
    for i in range(n_dir):
        off, size, data_size, name_off, name_size, flags = struct.unpack(
            ">6I", data[12 + 24 * i:36 + 24 * i])
        name = data[name_off:name_off + name_size].rstrip(b"\0").decode("latin-1")
        if name == member:
            if flags != 0 or size != data_size:
                raise ValueError("%s: entry %s is compressed or ciphered" % (path, member))
            return data[off:off + size]
    raise KeyError("%s: no entry %s" % (path, member))


def read_source(root, path):
    if "::" in path:
        file_path, member = path.split("::", 1)
        return eet_read(os.path.join(root, file_path), member)
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


# ---------------------------------------------------------------- pictures

SRGB = ImageCms.createProfile("sRGB")


def to_srgb_rgb(im):
    im = ImageOps.exif_transpose(im)
    icc = im.info.get("icc_profile")
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        flat = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        flat.alpha_composite(rgba)
        im = flat.convert("RGB")
    elif im.mode not in ("RGB", "L"):
        im = im.convert("RGB")
    if icc:
        try:
            src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
            im = ImageCms.profileToProfile(im, src, SRGB, outputMode="RGB")
        except (ImageCms.PyCMSError, OSError) as e:
            log("warning: ignoring unusable ICC profile (%s)" % e)
    return im.convert("RGB")


def fit(im):
    w, h = im.size
    scale = min(BOX[0] / w, BOX[1] / h)
    if scale >= 1:
        return im
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return im.resize(size, Image.Resampling.LANCZOS)


def convert(data, dest):
    im = Image.open(io.BytesIO(data))
    im.load()
    src_size = im.size
    if max(src_size) < MIN_LONG_SIDE:
        raise ValueError("source is only %dx%d" % src_size)
    im = fit(to_srgb_rgb(im))
    tmp = dest + ".tmp"
    im.save(tmp, "JPEG", quality=JPEG_QUALITY, subsampling=JPEG_SUBSAMPLING,
            optimize=False, progressive=False)
    os.replace(tmp, dest)
    return src_size, im.size


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--cache", help="keep the downloaded .deb files in this folder and reuse them")
    ap.add_argument("--strict", action="store_true",
                    help="fail if a source picture differs from the one the list was made from")
    ap.add_argument("--force", action="store_true", help="redo everything even if up to date")
    ap.add_argument("--keep-temp", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()

    outdir = os.path.abspath(args.outdir)
    want = spec_hash()
    if not args.force and up_to_date(outdir, want):
        log("%s is up to date (%d photos)" % (outdir, len(ENTRIES)))
        return 0

    t0 = time.time()
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="fetch-photos-")
    os.chmod(tmp, 0o755)  # apt-get download, run as root, hands the file to user _apt
    try:
        deb_dir = os.path.abspath(args.cache) if args.cache else os.path.join(tmp, "debs")
        debs = fetch_debs(deb_dir)
        lic_dir = os.path.join(outdir, "licenses")
        os.makedirs(lic_dir, exist_ok=True)
        photos = [None] * len(ENTRIES)
        changed = []
        for pkg, (deb, version) in debs.items():
            root = os.path.join(tmp, "x", pkg)
            os.makedirs(root)
            subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
            shutil.copyfile(os.path.join(root, "usr/share/doc", pkg, "copyright"),
                            os.path.join(lic_dir, pkg + ".copyright"))
            for i, (e_pkg, path, licence, want_sha) in enumerate(ENTRIES):
                if e_pkg != pkg:
                    continue
                data = read_source(root, path)
                src_sha = sha256(data)
                if src_sha != want_sha:
                    changed.append("%s:%s" % (pkg, path))
                    msg = "source changed: %s %s %s" % (pkg, version, path)
                    if args.strict:
                        sys.exit("error: " + msg)
                    log("warning: " + msg)
                dest = os.path.join(outdir, out_name(i))
                src_size, size = convert(data, dest)
                photos[i] = {"file": out_name(i), "package": pkg, "version": version,
                             "path": path, "licence": licence, "source_sha256": src_sha,
                             "source_size": list(src_size), "size": list(size),
                             "bytes": os.path.getsize(dest), "sha256": file_sha256(dest)}
            shutil.rmtree(root)
            log("%-28s %-14s %3d photos" % (pkg, version,
                                            sum(1 for e in ENTRIES if e[0] == pkg)))
        for name in os.listdir(outdir):  # photos left over from a longer list
            if name.startswith("photo-") and name.endswith(".jpg") and \
                    name not in {p["file"] for p in photos}:
                os.remove(os.path.join(outdir, name))
        manifest = {"spec_sha256": want, "script_version": SCRIPT_VERSION,
                    "box": BOX, "jpeg_quality": JPEG_QUALITY, "pillow": Image.__version__,
                    "packages": {n: {"version": v, "deb_bytes": os.path.getsize(d)}
                                 for n, (d, v) in debs.items()},
                    "changed_sources": changed, "photos": photos}
        with open(os.path.join(outdir, "manifest.json.tmp"), "w") as f:
            json.dump(manifest, f, indent=1)
        os.replace(os.path.join(outdir, "manifest.json.tmp"), os.path.join(outdir, "manifest.json"))
        total = sum(os.path.getsize(d) for d, _ in debs.values())
        log("wrote %d photos to %s in %.0f s (.deb files: %.0f MiB)"
            % (len(photos), outdir, time.time() - t0, total / 2**20))
    finally:
        if args.keep_temp:
            log("temporary folder kept: " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
