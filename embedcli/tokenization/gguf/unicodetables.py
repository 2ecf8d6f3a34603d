"""llama.cpp's Unicode tables, as its WordPiece reads them (generated: do not edit).

Written by tests/support/update_gguf_unicode.py from llama.cpp's ``src/unicode-data.cpp``
(Unicode 15.1), packed (zlib, then base 85, of zigzag varints): each code point's category class
(:data:`CONTROL` for Cc Cf Co Cs, :data:`MARK` for M, :data:`PUNCTUATION` for P,
:data:`SYMBOL` for S; an unassigned one is none of them), the White_Space set, the simple
lowercase map (one code point for one: U+0130 lowercases to ``i``) and the first code point of
each character's NFD (which is all llama.cpp keeps of it: ``é`` is ``e``, ``한`` is ``ᄒ``).
Python's ``unicodedata`` is not used: its version is Python's (3.10 has Unicode 13.0, 3.14 has
16.0), and ``str.lower`` is the full mapping.
"""

from __future__ import annotations

import base64
import zlib
from bisect import bisect_right
from functools import cache

OTHER, CONTROL, MARK, PUNCTUATION, SYMBOL = 0, 1, 2, 3, 4
WHITESPACE = frozenset((
    0x0009, 0x000A, 0x000B, 0x000C, 0x000D, 0x0020, 0x0085, 0x00A0, 0x1680, 0x2000,
    0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
))  # fmt: skip

_CLASSES = (
    "c-oa!VQ3Ur5We@_WHN5o=XTjH$8jvj5hR545D5~(5snZ_T10|~1d$LV&>|&-5=sy$hXj8VDgKZmMI?xbNGTzRlp+"
    "$O6cG_A{s__^`6(ro{*WS4+RoeE<nCgEl;Q2YH}AcfZ)U!ES7?IaLn2}tVgN%rFa~%aHxvDm3ZsruT<Mik#j~ofZ"
    "5R&$Jl+1y;9I~h7yaWzj8n*N;3UO9>x^Q6PYy(C>KCI20iOtx5Gu|?<H$V|FNErXL4$%&eR-4&>DA+~<Oe4XVeE5"
    "8A8bSvp~~}Wgw$1th$`eeoaB_AsFKl85Qv;2P*dDbC7t=$zGgX6RSjQydRRgn2|RDk;nJ0*m<~FKj80X8lFU)IcI"
    "t=*VEK}P`0709BP@cfzy`W?$AH4v&T^t=$nOWTM4ssfc`+swmaj9RWz!$~zKDV(%TiXHnxuOM5BG6+EP7(Fz7Lq9"
    "YlbIenCS>LsAZaZT<wj=`u*L|I5tg5N}@JaFkbhF&PEs^G_9t2^o%!M8?aI6(%UG{R|1*nXYah42?EA|I3#?j*fM"
    "X_8pm9ALM87IdFV$OCFMaBF~v-^v1CkZCeRvyJwFc%F^T7CRu)M9?2!?AT|6A$FxSlBvwfAu85)gl@!(g|q|F{`;"
    "#c#y=nHGAXv1jz*GzL7O)8BKVbzqrFAh~*$y|LxUs<3eTs4kVcMWcXBx+8?sE)>s07)}Cmb7|WpSH~M3(U>Ycf=2"
    "jAi}67R%ufY>8YVVOj@(LA`E3g0-Eg$sM_bVBk9qA>g5<snXZ(p>g=Maln_uw>I!1kRgWCOhbi{7Jsv4wwHJVHu9"
    "()6x$m4^M(wX2s{UgzCDq8Ue&k5)>O;4H-CE1OGFF+)v_$+__(e^FD>J4~;pZamz?;Af?lYdgr(rySw%mmxJF-l&"
    "pc)><WutIHyJYODk#AToYMWd)O2t^bNs&#%XA?WFO&7_j*i|dSEKgKoP56{nj%O+&I(IF3)s(dQcxrIAG?3DJtEr"
    "TYUaQzAUgUb~hUq6fD_RQcLN`r~hs)>7&|XfejP+uImqoQhlD6R$wc_3f3`dg|5+ICE>oM;q6FsKDy%;B`If%+Dl"
    "a)ZvE*baMc=vjQtooZ#=jE?4QpU#n-s=zPO;ClOtgIVqDH#{6r}%MWzr0i@b5^eFlcF4azUr*Wj~}0=dic^TZWg0"
    "swCJ%P1Y{d>ZeYnUUf~Dxd_N9rTD!+$OXg%Y(Atrgcu1B%u&8Mq3QMcL273tidvHz?toO>=0sF$(gLHMj*7uFUg<"
    "iTwQ}W1^5`8EVd{Tdi`H}LJgqAA)U923Cnzq#+MjjYn8#O7(d=UAQL4&llZ}*fcROZm0*4Lw=cS5VoncKWPgT|U^"
    "VWYVGy7%vYdr1chEGmV3NczFn6jE?M1>Gx1r;yX<Ll@b;k}?xr!C4h$A{X2;9r|DuD8C9-WulHrwpZCv$@a0OB~C"
    "XwB}GO%l+=BSW#@iD_Lx)dm-wwK-N)r^chZS3i`!+zi9?v9OqDLp^j0k7GD3MixsV&<?a-Z1?#M=-__m?8d*_?Ga"
    "+&UNcjC4Lt`HdkpdzVz*>PwWN$HWzvITdj+Fmp8ZR+Io%0rbbZr;;PjyyNCWjjk)mV?eH^NjIMy6}!Vb9PQL!lp#"
    "avALpgjyXkI*tI({D3EUC?Lu(g8QkTRcP6F-OPh4=e>?Au&SP0mZPjrvil)Z9uX16#|GK%|&Rw?L?lRs%sJ$9&D@"
    "ILHI}*-c3+k}$9)V8cY3-2qhGZ?VyHGCt&PL>Sk@bHI(h9ime|ZPe-2"
)
_LOWER = (
    "c-m`XbYLPGo*_*W3kuJLiG?)S&kSL(p-HfjX3S?sCNP6z2{V{62Sm+cW&$E6wt0+9Q<#~iL51cqvn*p~S_I^A0O?"
    "iCENdWIm{_)e7+aXxpsY>IOq(E5+dzt$1XzF^7$)dkHi)Xjj7)`0#QLHYi=e=@6(GMIXJWdrf)Qv<J2O)kBU2wE!"
    "q6jNk249qVC3^*@nQl(mIg+aI;J`n5+e@;Jp_bsxQ?e1XgfbJI9r*RAZP(2X~=;xm_#rDMMzD35Gcn)Nzx-3vL!H"
    "44NlQLP{>4I#B!jJ=Rn~y?gjT*m_{-ASO5XHDK+Xd4JcxRF`8IuochUwBLB;1ZiOHd3KT+Oi{X(&=Sv8(fFZgXBN"
    "EJj^QSU`kg&vBMkY8CmH^3|WCS895bGf$2=PlaGBE+sUq%oTzQVG*l;eLBBU5i9BcDZ#0ux@S!SsyBgo$MMNQR0<"
    "88!$k^4~9KWIAijbbdJ_v|Qc^tPg(!1@{B#y(<_&<+ad%Ap8FcMkYF>L{Rm}#Wd$BGfBEM@W@R-bv6e@&JzQXohy"
    ")<C|pb|7pJhY;WD{%Dl5}`Af67y%|Hy~vn-v$%5)WoR|D|@K8#RJWNHU0{0OmxkBJ9JS~1<YLr$IEBOJg)RXB-S2"
    "JK?<!v<OWnD9Ur4Bj>A21ceqiSFoA*dA-TMrn)g&?{yaCW;{d|8(m@"
)
_NFD = (
    "c-p0zUr^gucE>M2eioR-tm{9S={C)@+s;0uGnveE+nwn{r`u_FGSj#1^rcVTzU)k=>yVjtVRyQ%wHV7pCRo836HF"
    "AM5JE6fu%gJ6U_uq55KORw6^vyf6Rcp2WkM81kri3}etw9=ZJphR&TzipbAR{h-t#;6-1|HCa<ICtTvcycEz9MxY"
    "9)2XV_CHxtKQXW)#|zHH`Lpv&9Y2cGAU`Uw#<~+Bc8sCz2aGMyErcH5GTZ);swiPdc;dA`^C%RfH*B45U+`c#F@J"
    "|DBcu@#5r+9To8|ni|TJe?3P3&Es~g|RWc)Klgw4unuNHE@g?2Wwn>V6B`HatWJS_nU1!$C!;%fjh$Jfs>-R<RxT"
    "GwZlr-CV_iC4Eu`A=*mGNxG)4Pk~;tsJhws=w8BVJ-`yE3-T*e)|5UQ>BUoDm1bo8pi-Cys~<;xTdQ9z0=hiCYqt"
    "ICk0C^;agaL;kfNG+}Yx{xj3<vP@EXn|My#B94hmk_m}h<>+0{Tg5Y9wYSZftJ2oB)pk_l6!i|<<?Z^2xUl2v^5d"
    "3y+oGFVlhmVLm&+u?U6QOMEXmkguRd#Uxv;Eflal5dx!d)d%SFlfUC&FdikYg9-lM%&JS%P!&&i%)@rJA3%+zc>i"
    "%D7~5lMkptEu!^Q|VLEA_+-yu4ioHu2MynZGLQ-pZ|l&Tl<V>SG^g#&oU2avPIvv%!8JB$Tr`#%_Elio@IXYJ@W^"
    "a*=3nJ%j~wy9?R^r%){Fcf5$SvWtscxtm?nF9(I}Et2K(!2c7O7e!x`!g{gkT`o7Ejz<K`HmiZgYeE(4+Z|^u>rP"
    "Zcrw;tSD9ad#^XvJ);T$j_VvPQmIudd2EWt}Ka#6I!-SFN{KKdWg`{J&T8R(X4szi(T0wt37ln#{*ulg+lN{*I|W"
    "z0*|hHj0_*$BaiV+m`>ZOr!Jn6U+SgQkAvyJ5E{te5s1&_7A^q>M}pMSgnWKjSiR{|7><z{O$Up%Ix?=zo@sUKWJ"
    "?~KV_L}+pc+UhpFC&!zzE@Hh;U%D6-Y0$u>XRV}Ab+|4)O<>h8@y($DYulhc3XC|k~va=Xrye<lY>+%hUEZV|`Ct"
    ">PK6S3E0j6VHi#;(2kWctPAPPKtZQDY0L?EDng%;sNoRcu1TP2gRG>5ph-=66eHWab7$sE{ey+j&0&*$&|!{ZH*P"
    "%8n<lP=DEg-ZH-&DB_v&vMM;ljsj*^P<CbkJl77jmWKgm$8OFxOij9pG+awW5K{AGIjTPG(E4DRNY!gpoTT{iRrY"
    ")Pc+1FIDO}rrP7ALW-sbX7G#WrzTJRn{Z4>fJsG%Vf_kBGD4usAOsZQ8PFOk5IAh~1K?q(u^Is@T-DWy`FjT@sgc"
    "U{h1YrlyKbl3qzl(kEGw^kY*~#iph$o7S7QY|2Q2l1)iSl9NPur^?vaF{v;e{g*m3@pIWGiAq`|F-farM$#skllU"
    "a_l1|Bjq+61d^h#2aKFNxtU$QD0l&njJ?@`{6j7YMQup}=Tl@ul8lCoq{()<g};XTUV)XpQG7JJ3B;&yRd+#ybgy"
    "Tps)9`TacFJ2Z0#A)$>c<t9b9};K8LGh+IB+iK=;=(=3W8#u{LhSxUeZBvuyX!Z8y1OnS@f_G)Kd*A&fb*<=;=t~"
    "@X34zDT?h7<wF9=vNH!(816F-d&&vmPTjc|`RlG~Gl6A@If!cci<LXNik~BB$t`CaKkMFK6KYqXEZLn+S8tymV2A"
    "2u_n`L)3)LQ-q{jR~bR~uaR@48&UhWo9t2HRC`sI&jl<%+09Of8~%<awgjbUk5N-e20r|L-n)UUf;;g`TkOz!NUh"
    "@k<wbv;D4ZivL<`CYrUiCYq~0tTOv8v-i8^PyXEKdw0KOT>s?kgxaznb+)`eHTSukjZgX`CU!(0z3K<d59IeF>S6"
    "`>ZT)TSj9XaG2W{8gPkzWK_c?z%|ItkAH%P#ddh>*}{nup9{jnvv_K>lz?*E^g@IC)r+luoA`1<cr(_5vD{lWid7"
    "cM@^l|Ow14&AIivD1CiKDqP6&aRw8!*?8tdUimI#~j+|cBm!bP|s<HM#2uo&N;Lcb0~Ykq1MX|`BxkY-*jju=g{&"
    "Uhw>g5)aG+tc&f^5o*~J6hwSksY57+Lt1qcIFeHCRkMFRog|zbc%{zLQJw@jF6e(Vr#On%4?304dk5v&MpAAlt0K"
    "ZAQ=Sh*@ARi?|D?UdD#|4pj^5|zt622r$e_8#_oe+f1s@8K#kfy7ao8<Z%DsH?W7@j3<CwCuRRI!(=*!LD`_L_?Q"
    "yn>s7QYQuD<mhuRs?&{LL7-c(7^i~dbBZy#Nx@gIVas`JW=J2YeA^L0XI_K5IZdQ~h4pvHoo@-&$<Fg9N$J;ByTG"
    "9$<|fa%u6EPp|Lq(Orperkq}Oe@xSs<?ns)P99D!d}hsjuR_T(p|?l&3yC~x_U+WF{Z6YD#k739982^P#@!8C`aF"
    "ejVt%jzIJPCkz<GpE&fGlz%LRB(_;lNxv9gLw>^#V^H=sU4O!dWJK_oWREkBF<Fw9>QVHA?2c;dB-?fy{=+2hpq&"
    "tjCE$gf0;ALg0#RfK?gzOe@?KB%~?(sgP#&%SI80nb9>@DdBM_g20ADhzQL*FJ$&^d0fLbsvdb|7WCcIxZ!i@-YV"
    "4g+?GT}|K*WY`;>47o??Xamo)8!$COIl~5pZ1`!lrOtoas&vV$1s++WHAw(pInIV!DrZ2!a7Zh4bMCZys9b6o$j*"
    "FEIv(t2n2uG_lsoOD{hu@Z|9%5!*-OJihmKV(xXkmgfA)A+qo!77!7mhpBjp={`vCKgaA70wXIN@R-Xe$FW{|E-|"
    "Y!7l^BK%&MO^=K$HpifZR&Hm=J}#q)YL@|23DQ~GVsG^>ZhT?aFrI?X_sw&vr|$H}kE9Hq(jr~CAaX*?Mr&7UV!3"
    "ZHTqWo;#2W-eK8Lm$x#oep->J&o6JqQ47IVrdT{HSjJQz*|^P(2O&#hfqm!dL3c?wgY3lxsNwrBsS6**+*C7>>EL"
    "xnBkn<%RrIO^_GJy&N1FC@hZ`NmEW>RMmT%VF+Dlf`BXpalF%#SP9G<Eub=1yBAg&oY-GvLIIb5sk7H>+N6K!l6b"
    "f$xxU<Yjev^RfW>R{5`YL4(>w`A_p6xOl#Qh@6zK2N}<;b6B^H>MEfi_m{1g1sT^rh&%AV|ESFGrGPHUEMR2>C-S"
    "5}*~xa*@%;)Nb<TEo_#Z{el@RNU%Nh0n@~8=xM>qF`l*af*wKtVd9zaabjqmz#JyHR+z!wWdeycGs*6lW(}6#rUD"
    "-<;@BCcBJ3;(rXo(r=MK~45Wx?$0cGAd2dn|!uV9eK9%Ky;-)6I9lko#1?0RwM28CcqEmvFCbV@GqUE-#LFG&|`F"
    "v>-W+@!VoI-wHg<VYl@*Z{oDOoGLfV&l%NYP3Vo>ufx<EXQ_^5WvslwHE}dtko3SI{r%$u|@nBVcAa~-`)TmPfi`"
    "-XE-s(cDMkHvtNZu8e{nup$9~Wh>@@Mi0m~!Ma~9*pA!^AIC}(VcO>yMduNfoBzI9T#+uF(aGOAh^*hQJVwCHe;V"
    "_L~!Q;*?4_}QUJKPeV#f+C(Wv^RiKge)Vw9Fiho?y0EIPFg}N5H7_Apq8%;)6k)CV&YK7BELiR?q4ef<fZ6z|OGB"
    "4O8+4Q^8l)%MvQ^(OhSaR#?ANK#s3-3$P62&#`8J0L3=64AYop8arR1!r6;oAR_o;cXD+w&CZ`D+Lu@^U4R=1ux;"
    "k=XhEb&4L%R+_<bEXa!s)QCD&Cqm`mXLl0x7!j}pZ%+LetC-Qo%&V;!k7t%(}jBrn!H;A&3P)Y{{T8kd<&)L7pH_"
    "OGq5@6pcw=KeB39!LX;M9s;+bCSk~%&x;0sk7^Bt+n&&4oiE>eP2{NS?}##rsn+B9p+nB-M7wGRqj<PHx&9i*uB$"
    "u29y|g0L?%&sm`aLmlo_3bOGMy1ijA+mU{)UQ-T7p)b@ZjYOb!DdsNInv!7j95C$^bZG~x)r04^>c;-f1>lXC%(+"
    "k=xP$WBwpOh8>-28T?iz2Xmg6;wTQB{n0N*e<_z|!&ktix>>1Y#Y6QD6`#JS|ui*y*SDyNvH_4IBDCb?Q^a2r$I`"
    "S}$4$uzpN1{uDky%e3Q{_U&g~ZG!YsO!MM8fz|BYZ=0njF%1|7e8Bo4L0c=mpcOs57SO?)$4WAz^;gm++=6zXvze"
    "DUh;x9&J8H7dU16NY)4(v`0SaFVibcWZVXhXrE6fyB^Z~^$1U<I}ZnSKR{I>{1bNei7@w0ulnZB(MN_<MEfDb5c3"
    "PL$mtfD1>=rzFr+Iq7(2!0~16Ug48$%Y_!gNxRi+gcymAkYd--q?mgw>oG?8(R}}0OQy9@xH2PyTa8iT4WV7fFRH"
    "c6z8=p`#+ZTlL?n?`Y-RbtaMuM;V<Jvu6j%4w;Pz70ygicq6MvQWgodV1AQczxGI<{F+DW#Q|yazznj9KB|!uT17"
    "pDQ6*M51#Bj7SS^y|r7UY2`U<3#*V)!MVEihVwsC%7jYqZh__!KRBkyo8(wnE$jzfV^bN2nOQ&Dx4fYXjmJ1b(zg"
    "K^56qtODEt{Wd<sFJg@QF0=Kynv~vQYV*>PfScu9VkJB6veeFB-K%Hw><2t6y-fvBoZ?l{!pGJ95dF<W8Jr6Le=+"
    "!^AmdZ*Fj^b6{SyR8jwn9IvvKTugRmW?Kd$`y&k}W6Hkk;|oU8rUiSbV{18pdbBVOBv1h@Uk4er_V<W6UpfKT`&z"
    "smFgL7vSA1ua15D}rXUFj_a@2I3p~*#H%xAztQXe!GEl2Bmp{!gVznI!*AuC`f-y#twA%(_es>26BM=7W*1n<awq"
    "WNcPcWPD?V#c9Xlz|2&?RwwB<`)k81<{XpbA3B@x6A+W+fMh4yzES(@6fzlemD$QD3({?l0LHGdWr|Ala`v{urYS"
    "(v+iVy>}OPe`EE{hiakQILvjbyzQ$dcT&r1!IM_H)!#Z7-R9ACMqX4FGdTG`PSvB@dR;xO^Cgp=CZ|Pb4RDA7ZAP"
    "oy|?Kw9H0!l!+=U%yOK4`ha$di>1B9pPGcel-37y1CwRjvNE@A+pHA!vLqSfbJCK}RSW~gD}-a#IX0@;o@55m+JM"
    "BSV1@**;}Zs2RPEd?X~~RW;U*niV#{43c_pcjP#k3kDXgkCOUe~PE2jnPK=gg`GqT^YYbp+NYVo5*Ps*{2AK?2H7"
    "2O}vL4s|4Sz3TidXfXs0FYs;S^_#hRILw44G3ZvS)55}-YbGNv<W`5Q)p3O1X$MAXCmBAtfCbb1sj(HOACxkaT0C"
    "g1G-NLdUzJ(*)Y%!ERiebNZSJ>@P#-b@V+WCz#tIi2<D4RYkrw_H0cG({7-R$M8BP4Y!=giUZBU(&SNRC@GiA8f|"
    "hA|rr3|R`Hmny$L<}&Yd{CZ*c5{U<7AwvC{Y3oyvKHp=0C2_#2AN(S*`&5=W#ZWdIL|6@s^`Zau^FZug$;4;6VNi"
    "9vY!j64fEn8UL#|8(0i7=lu7r^R%?NmwA~BoLQYiWxtB)0JZ=d?~-<+rJiM`Pi@0eFYUT;JFv?2OUy^?PO@<yV=e"
    "Gc;O;kBI7e{~U)X-Hv=y$y#`vdK=Q)xcAbf-h{xQ}$PAGTk0JQ4aYnz})6<s95lZRMBV`Lf4xXvwT1v(Bg+F4dvQ"
    "Qy$b;vW4XFYtdRD8EJ~1H?bw!&bmW8^xY${KNe!|9$^Z5YDL99U>LFxrfV?J$&Qo3h)Ba^*x+Wtp5h&#n>Y"
)


def _numbers(packed: str) -> list[int]:
    data = zlib.decompress(base64.b85decode(packed))
    out, n, shift = [], 0, 0
    for byte in data:
        n |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            out.append(-(n >> 1) if n & 1 else n >> 1)
            n = shift = 0
    return out


@cache
def _tables() -> tuple[list[int], list[int], dict[int, int], list[int], list[int], list[int]]:
    numbers = _numbers(_CLASSES)
    half = len(numbers) // 2
    starts, at = [], 0
    for step in numbers[:half]:
        at += step
        starts.append(at)
    pairs = _numbers(_LOWER)
    lower, at = {}, 0
    for i in range(0, len(pairs), 2):
        at += pairs[i]
        lower[at] = at + pairs[i + 1]
    rows = _numbers(_NFD)
    firsts, lasts, nfds, at = [], [], [], 0
    for i in range(0, len(rows), 3):
        at += rows[i]
        firsts.append(at)
        lasts.append(at + rows[i + 1])
        nfds.append(at + rows[i + 2])
    return starts, numbers[half:], lower, firsts, lasts, nfds


def category(cpt: int) -> int:
    """The class of a code point's general category, as llama.cpp's flags have it."""
    starts, kinds = _tables()[:2]
    return kinds[bisect_right(starts, cpt) - 1]


def lowercase(cpt: int) -> int:
    """llama.cpp's ``unicode_tolower``: the simple lowercase mapping, else the code point."""
    return _tables()[2].get(cpt, cpt)


def nfd_first(cpt: int) -> int:
    """llama.cpp's ``unicode_cpts_normalize_nfd`` of one code point: its NFD's first."""
    firsts, lasts, nfds = _tables()[3:]
    i = bisect_right(firsts, cpt) - 1
    return nfds[i] if i >= 0 and cpt <= lasts[i] else cpt
