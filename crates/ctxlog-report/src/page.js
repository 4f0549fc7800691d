// `start(at)` binds to the page's body and shows step `at` ({curve, step},
// step 'last' for the newest), else the first compaction (else prune).
// It answers where it is, so a page whose body is replaced by a newer one
// (ctxlog serve) starts again where the reader was.
(function(){
'use strict';
function start(at){
var data=JSON.parse(document.getElementById('data').textContent);
var curveSel=document.getElementById('curve'),pick=document.getElementById('pick');
var cur=0,step=0;
data.sessions.forEach(function(s,i){var o=document.createElement('option');o.value=String(i);o.textContent=s.label;curveSel.appendChild(o);});
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined)e.textContent=text;return e;}
function fmt(n){return n===null||n===undefined?'–':Number(n).toLocaleString('en-US');}
function when(ms){try{return new Date(ms).toISOString().replace('T',' ').replace('Z',' UTC');}catch(e){return String(ms);}}
// The page keeps messages and parts as arrays (see data::compact_messages).
function decode(s,m){
  var kinds={t:'text',r:'reasoning',f:'file',x:'tool'};
  function part(p){
    var o={type:kinds[p[0]],text:s.texts[p[1]],cut:p[2],tokens:p[3]};
    if(p[0]==='x'){o.call_id=p[4];o.tool=p[5];o.input=s.texts[p[6]];o.error=p[7]===1;o.cleared=p[8]===1;}
    return o;
  }
  return {id:m[0],source_id:m[1],role:({u:'user',a:'assistant',d:'developer',s:'system'})[m[2]]||'user',summary:(m[3]&1)!==0,marker:(m[3]&2)!==0,synthetic:(m[3]&4)!==0,tokens:m[4],parts:m[5].map(part)};
}
function partView(p){
  var d=el('div','part '+p.type+(p.cleared?' cleared':''));
  if(p.type==='tool'){
    d.appendChild(el('div','role',p.tool+' '+p.call_id+' · ~'+fmt(p.tokens)+' tokens'+(p.cleared?' · output cleared by a prune':'')+(p.error?' · error':'')));
    d.appendChild(el('pre','in',p.input));
    d.appendChild(el('pre','out',p.text));
  }else{
    if(p.type!=='text')d.appendChild(el('div','role',p.type));
    d.appendChild(el('pre','',p.text));
  }
  if(p.cut>0)d.appendChild(el('p','cut','… '+fmt(p.cut)+' more characters (ctxlog window --at SEQ prints them whole)'));
  return d;
}
function messageView(m,pivot){
  var d=el('div','msg '+m.role+(pivot?' pivot':'')+(m.summary?' summary':''));
  var h=el('div','role',m.role+' · ~'+fmt(m.tokens)+' tokens');
  if(pivot)h.appendChild(el('span','badge','compaction marker (the window starts here)'));
  if(m.summary)h.appendChild(el('span','badge','summary'));
  if(m.synthetic)h.appendChild(el('span','badge','synthetic'));
  if(m.source_id)h.appendChild(el('span','badge',m.source_id));
  d.appendChild(h);
  m.parts.forEach(function(p){d.appendChild(partView(p));});
  return d;
}
// A step's window is the window before it changed: its first `keep`
// messages, then `add`. Rebuilt forward from the last one shown.
var built={};
function windowAt(c,i){
  var s=data.sessions[c],b=built[c];
  if(!b||b.i>i)b={i:-1,w:[]};
  while(b.i<i){b.i++;var st=s.steps[b.i];b.w=b.w.slice(0,st.keep).concat(st.add);}
  built[c]=b;return b.w;
}
function show(c,i){
  var s=data.sessions[c];if(!s||!s.steps.length)return;
  cur=c;step=Math.max(0,Math.min(i,s.steps.length-1));
  curveSel.value=String(cur);pick.max=String(s.steps.length-1);pick.value=String(step);
  var st=s.steps[step];
  var num=st.step||step+1,total=s.total_steps||s.steps.length;
  var run=st.first?' · shown for steps '+st.first+'–'+(s.steps[step+1]?s.steps[step+1].first-1:total)+' (their peak; their prunes merged)':'';
  document.getElementById('where').textContent='step '+num+' of '+total+run+' · seq '+st.seq;
  var info=document.getElementById('step-info');info.textContent='';
  info.appendChild(el('div','', when(st.time)+(st.no_usage?' · no usage recorded'+(st.error?' ('+st.error+')':'')+': the call reported no tokens':'')+' · total '+fmt(st.total)+' tokens (input '+fmt(st.tokens[0])+', output '+fmt(st.tokens[1])+(st.tokens[2]?', reasoning '+fmt(st.tokens[2]):'')+', cache read '+fmt(st.tokens[3])+', cache write '+fmt(st.tokens[4])+(st.tokens[5]?'':', total computed')+')'+(st.output_streamed?' · output as streamed: the recording has no final count':'')+' · usable '+fmt(st.usable)+(st.percent===null?'':' ('+st.percent+'% used)')+' · threshold '+fmt(st.threshold)+' · window estimate '+fmt(st.window_estimate)+(st.open?' · open: its end is not recorded yet, the usage is what the model reported so far':'')));
  var evs=document.getElementById('step-events');evs.textContent='';
  st.events.forEach(function(e){var d=el('div','ev');d.appendChild(el('b','',e.kind));d.appendChild(document.createTextNode(' seq '+e.seq+': '+e.what));evs.appendChild(d);});
  var rem=document.getElementById('step-removed');rem.textContent='';
  var r=st.removed;
  if(r&&(r.messages.length||r.cleared.length)){
    var box=el('div','removed');
    box.appendChild(el('div','role','Left the window before the next step'+(st.first?' shown':'')+': ~'+fmt(r.tokens)+' tokens'));
    r.messages.forEach(function(x){var m=decode(s,s.messages[x.message]);var first=(m.parts[0]&&m.parts[0].text)||'';box.appendChild(el('div','',m.role+' message, ~'+fmt(x.tokens)+' tokens: '+first.slice(0,160)));});
    r.cleared.forEach(function(x){box.appendChild(el('div','','tool output cleared: '+x.tool+' '+x.call_id+', ~'+fmt(x.tokens)+' tokens'));});
    rem.appendChild(box);
  }
  var w=document.getElementById('window');w.textContent='';
  var refs=windowAt(cur,step);
  document.getElementById('window-head').textContent='The model input right after step '+num+': '+refs.length+' messages'+(st.pivot?', starting at a compaction':'');
  refs.forEach(function(ref){var m=decode(s,s.messages[ref]);w.appendChild(messageView(m,m.id===st.pivot));});
  Array.prototype.forEach.call(document.querySelectorAll('.pt.sel'),function(p){p.classList.remove('sel');});
  var sel=document.querySelector('.pt[data-curve="'+cur+'"][data-step="'+step+'"]');if(sel)sel.classList.add('sel');
}
document.body.addEventListener('click',function(ev){
  var t=ev.target.closest?ev.target.closest('[data-step]'):null;
  if(!t)return;
  show(Number(t.getAttribute('data-curve')||0),Number(t.getAttribute('data-step')));
  if(t.tagName==='BUTTON')document.getElementById('step').scrollIntoView();
});
curveSel.addEventListener('change',function(){show(Number(curveSel.value),step);});
pick.addEventListener('input',function(){show(cur,Number(pick.value));});
document.getElementById('prev').addEventListener('click',function(){show(cur,step-1);});
document.getElementById('next').addEventListener('click',function(){show(cur,step+1);});
// Open at the first compaction (else prune) of any session.
var pickC=0,pickS=0,found=false;
['summary_completed','parts_pruned'].forEach(function(kind){
  data.sessions.forEach(function(s,c){s.steps.forEach(function(st,i){
    if(!found&&st.events.some(function(e){return e.kind===kind;})){pickC=c;pickS=i;found=true;}
  });});
});
// A link to a seq (`#seq=N`, as a search hit gives) opens at the first
// step of the main session that ends at or after it.
if(!at){
  var m=/^#seq=(\d+)$/.exec(location.hash),main=data.sessions[0];
  if(m&&main&&main.steps.length){
    var seq=Number(m[1]),i=0;
    while(i<main.steps.length-1&&main.steps[i].seq<seq)i++;
    at={curve:0,step:i};
    setTimeout(function(){document.getElementById('step').scrollIntoView();},0);
  }
}
if(at&&data.sessions[at.curve]){
  var last=data.sessions[at.curve].steps.length-1;
  show(at.curve,at.step==='last'?last:Math.min(at.step,last));
}else{show(pickC,pickS);}
return {where:function(){var s=data.sessions[cur];return {curve:cur,step:step,last:!!s&&step>=s.steps.length-1};}};
}
window.ctxlogReport=start;
window.ctxlogReportView=start(null);
})();
